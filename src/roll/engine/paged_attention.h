#pragma once
// Attention of one engine step over the paged cache (an AttentionBackend for the model): writes
// the step's K/V into their slots, then every query reads its sequence's keys and values block
// by block through the block table (online softmax), so no sequence's cache is ever gathered
// into a contiguous copy. Serves prefill chunks and decodes of many sequences in one call.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "roll/engine/paged_kv_cache.h"
#include "roll/model/transformer.h"

namespace roll::engine {

// Where the step's tokens belong. Sequence i owns the step's tokens [q_start[i], q_start[i] +
// q_len[i]), the last q_len[i] of its first ctx_len[i] tokens (K/V of the rest is cached).
struct AttentionMetadata {
  std::vector<int64_t> q_start, q_len, ctx_len;
  std::vector<int32_t> block_tables;  // [num_seqs, max_blocks] row-major
  int64_t max_blocks = 0;
  at::Tensor slots;  // [N] int64: block * block_size + offset of each token of the step
};

class PagedAttention : public model::AttentionBackend {
 public:
  PagedAttention(PagedKvCache& cache, int64_t num_heads);

  // The step the next attend() calls belong to (kept by pointer: it must outlive them).
  void set_step(const AttentionMetadata* meta) { meta_ = meta; }
  // q [N, Hq, D], k/v [N, Hkv, D] (any float dtype) -> [N, Hq * D] in q's dtype.
  at::Tensor attend(int64_t layer, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) override;

 private:
  PagedKvCache& cache_;
  int64_t num_heads_;
  const AttentionMetadata* meta_ = nullptr;
};

}  // namespace roll::engine
