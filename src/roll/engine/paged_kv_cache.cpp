#include "roll/engine/paged_kv_cache.h"

#include <ATen/ATen.h>

#include "roll/core/error.h"

namespace roll::engine {

PagedKvCache::PagedKvCache(KvCacheShape shape, at::ScalarType dtype) : shape_(shape), dtype_(dtype) { allocate(); }

int64_t PagedKvCache::bytes_per_block(const KvCacheShape& s, at::ScalarType dtype) {
  return s.num_layers * 2 * s.block_size * s.num_kv_heads * s.head_dim * static_cast<int64_t>(c10::elementSize(dtype));
}

void PagedKvCache::allocate() {
  if (storage_.defined()) return;
  // at::empty: pages are committed only as blocks are first written, so a large budget costs
  // address space, not memory, until it is used.
  storage_ = at::empty({shape_.num_layers, 2, shape_.num_blocks, shape_.block_size, shape_.num_kv_heads,
                        shape_.head_dim},
                       at::TensorOptions().dtype(dtype_));
}

void PagedKvCache::release() { storage_ = at::Tensor(); }

at::Tensor PagedKvCache::keys(int64_t layer) const {
  if (!storage_.defined()) throw Error("the KV cache is released (engine asleep): call wake() first");
  return storage_[layer][0];
}

at::Tensor PagedKvCache::values(int64_t layer) const {
  if (!storage_.defined()) throw Error("the KV cache is released (engine asleep): call wake() first");
  return storage_[layer][1];
}

void PagedKvCache::copy_blocks(std::span<const BlockCopy> copies) {
  if (copies.empty()) return;
  std::vector<int64_t> src, dst;
  for (const auto& c : copies) src.push_back(c.src), dst.push_back(c.dst);
  at::Tensor s = at::tensor(src, at::kLong), d = at::tensor(dst, at::kLong);
  // Blocks are dim 2 of the storage: one gather/scatter for every layer, keys and values.
  storage_.index_copy_(2, d, storage_.index_select(2, s));
}

}  // namespace roll::engine
