#pragma once
// The K/V storage the block tables index: per layer, keys and values of shape
// [num_blocks, block_size, num_kv_heads, head_dim] in the cache dtype. Released on sleep() and
// allocated again on wake() (contents are not kept: the prefix cache is reset with it).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <span>

#include "roll/engine/kv_cache_manager.h"

namespace roll::engine {

struct KvCacheShape {
  int64_t num_layers = 0, num_blocks = 0, block_size = 16, num_kv_heads = 0, head_dim = 0;
};

class PagedKvCache {
 public:
  PagedKvCache(KvCacheShape shape, at::ScalarType dtype);

  static int64_t bytes_per_block(const KvCacheShape& shape, at::ScalarType dtype);
  const KvCacheShape& shape() const { return shape_; }
  at::ScalarType dtype() const { return dtype_; }

  // [num_blocks, block_size, Hkv, D] views into the storage.
  at::Tensor keys(int64_t layer) const;
  at::Tensor values(int64_t layer) const;
  void copy_blocks(std::span<const BlockCopy> copies);

  void release();   // frees the memory
  void allocate();  // (re)allocates it, uninitialised
  bool allocated() const { return storage_.defined(); }

 private:
  KvCacheShape shape_;
  at::ScalarType dtype_;
  at::Tensor storage_;  // [layers, 2, blocks, block_size, Hkv, D]
};

}  // namespace roll::engine
