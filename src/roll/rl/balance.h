#pragma once
// Workload balancing over data-parallel ranks and micro-batches (docs/rl.md batch_balance, 3.12 sequence
// packing `load_balance`): a Karmarkar–Karp (largest differencing) partition that reproduces ROLL's
// get_seqlen_balanced_partitions exactly, heap tie-breaking included.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "roll/rl/metrics.h"

namespace roll::rl {

using Partitions = std::vector<std::vector<int64_t>>;

// Partitions item indices 0..n-1 into k parts of near-equal total `workloads`; with equal_size every
// part has n/k items (n % k == 0 required). Each part is returned sorted ascending; n >= k required.
Partitions karmarkar_karp(const std::vector<int64_t>& workloads, int64_t k, bool equal_size);

// FLOPs proxy of a sequence: 24576·len + len² (6·hidden·len for a 4096-hidden model plus attention).
int64_t sequence_workload(int64_t len);

struct BalanceResult {
  std::vector<int64_t> order;  // new position -> original sample; dp rank r gets the r-th block of n/dp
  Partitions partitions;       // per dp rank, in the order of `order`
  MetricMap metrics;           // <prefix>/{min,max,minmax_diff,balanced_min,balanced_max,mean}
};
// ROLL's batch_balance: equal-count KK partition of the workloads of `seq_lens` (attention-mask sums)
// into dp_size parts; inside a part samples are sorted by workload and dealt small items to both ends
// (p[::2] + reversed(p[1::2])). keep_minibatch balances each block of minibatch_size samples on its own.
// prefix is e.g. "global_seqlen/actor_train".
BalanceResult batch_balance(const std::vector<int64_t>& seq_lens, int64_t dp_size, std::string_view prefix,
                            bool keep_minibatch = false, int64_t minibatch_size = 0);

struct SequencePackingParams {
  int64_t max_packed_sequence_length = 0;  // max_packed_sequence_length_{train,forward}
  int64_t min_num_micro_batches = 1;       // min_num_micro_batches_{train,forward}
  int64_t tp_size = 1;
  int64_t cp_size = 1;
  int64_t vp_size = 1;
  int64_t pp_size = 1;
};
// Packed lengths are multiples of lcm(16, cp > 1 ? 2·cp·tp : tp).
int64_t packing_pad_factor(int64_t tp_size, int64_t cp_size);
// This rank's micro-batch count before the DP all-reduce (MAX):
// max(min_num, min(B, ceil(Σ padded len / max_packed_len))). padded_width = attention_mask.shape[-1]
// must not exceed max_packed_sequence_length.
int64_t packing_num_micro_batches(const std::vector<int64_t>& seq_lens, int64_t padded_width,
                                  const SequencePackingParams& params);

struct PackingPlan {
  Partitions partitions;  // micro-batches in execution order (ROLL's partition_indices_list)
  int64_t num_micro_batches = 0;
  MetricMap metrics;      // <train|forward>/{num_micro_batches, effective_ratio, seq_len_balance_ratio,
                          // avg_samples_per_pack}
};
// `num_micro_batches` is the all-reduced count; it is rounded up to a multiple of pp_size when vp_size > 1.
// KK (unequal sizes) on the padded workloads; micro-batches sorted by workload descending, then
// reordered sorted[::2][::-1] + sorted[1::2] so the small ones sit at both ends of the pipeline.
PackingPlan load_balance_pack(const std::vector<int64_t>& seq_lens, int64_t padded_width, int64_t num_micro_batches,
                              const SequencePackingParams& params, bool is_train);

// Flattened partitions: position i of the packed results holds original sample order[i].
std::vector<int64_t> packing_order(const Partitions& partitions);
std::vector<int64_t> inverse_permutation(const std::vector<int64_t>& order);
// Results concatenated in packed order (dim 0) back to the original sample order.
at::Tensor restore_results_order(const at::Tensor& results, const Partitions& partitions);

}  // namespace roll::rl
