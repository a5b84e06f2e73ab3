#pragma once
// Token-budget dynamic micro-batching (docs/rl.md, roll/utils/dynamic_batching.py) as index plans: the
// caller reorders the batch by `order` and slices/narrows tensors by the returned ranges and lengths.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "roll/rl/metrics.h"

namespace roll::rl {

using Range = std::array<int64_t, 2>;  // [start, end) within one dp shard

struct DynamicBatchingPlan {
  // New position -> original sample. Samples are sorted by length (stable) and dealt round-robin to the
  // dp shards (sorted[r::dp]); shard r is the r-th block of B/dp positions.
  std::vector<int64_t> order;
  std::vector<Range> micro_batch_indices;  // same for every dp rank
  std::vector<int64_t> micro_batch_lengths;  // padded length each micro-batch is narrowed to
  MetricMap metrics;  // dynamic_batching[/<prefix>]/{valid_tokens, actual_tokens_origin, actual_tokens,
                      // removed_padding_tokens, removed_padding_ratio}
};

// seq_lens: attention-mask sums; padded_width: attention_mask.shape[-1]. Walking shard index j: L_j =
// roundup(max over shards of the j-th length, round) (<= max_tokens); a micro-batch grows while
// size·max(L) <= max_tokens. With pp > 1 and vpp set, the largest multi-sample ranges are halved until
// the count is a multiple of pp. B must divide by dp_size.
DynamicBatchingPlan dynamic_batching_shard(const std::vector<int64_t>& seq_lens, int64_t padded_width, int64_t dp_size,
                                           int64_t max_tokens_per_microbatch, int64_t sequence_length_round,
                                           int64_t pipeline_model_parallel_size = 1,
                                           int64_t virtual_pipeline_model_parallel_size = 0,
                                           std::string_view log_prefix = {});

// The micro-batch walk of dynamic_batching_shard over shards already sorted by length: shard_lens[r][j]
// is the j-th shortest length of shard r, every shard as long (`order` is left empty). The metrics
// count every shard's samples, each padded_width long before.
DynamicBatchingPlan plan_sorted_shards(const std::vector<std::vector<int64_t>>& shard_lens, int64_t padded_width,
                                       int64_t max_tokens_per_microbatch, int64_t sequence_length_round,
                                       int64_t pipeline_model_parallel_size = 1,
                                       int64_t virtual_pipeline_model_parallel_size = 0,
                                       std::string_view log_prefix = {});

// The padding metrics of a plan: <prefix>/{valid_tokens, actual_tokens_origin, actual_tokens,
// removed_padding_tokens}<sum_tag> and <prefix>/removed_padding_ratio. sum_tag "@sum" marks per-rank
// shares that the pipeline sums over the ranks.
void add_padding_metrics(MetricMap& metrics, const std::string& prefix, int64_t valid, int64_t origin, int64_t actual,
                         std::string_view sum_tag = {});

// Halves the largest (first, on ties) range with more than one sample until ranges.size() is a multiple
// of pp; an error naming `mini_batch_index` when no range can be split.
void split_ranges_to_pp_multiple(std::vector<Range>& ranges, std::vector<int64_t>& lengths, int64_t pp,
                                 int64_t mini_batch_index);

struct MiniBatch {
  int64_t start = 0, end = 0;              // sample range of the dp shard
  std::vector<Range> micro_batch_indices;  // relative to start
  std::vector<int64_t> micro_batch_lengths;
};
// Groups the shard's micro-batches into optimizer steps (one epoch; repeat for ppo_epochs): by default
// ga_steps consecutive micro-batches per mini-batch. keep_mini_batch keeps static mini-batches of
// mini_batch_size samples and splits micro-batches that cross their boundaries (then, with pp > 1 and
// vpp, each mini-batch is split to a multiple of pp). The ranges must cover [0, batch_size) in order.
std::vector<MiniBatch> make_mini_batches(const std::vector<Range>& micro_batch_indices,
                                         const std::vector<int64_t>& micro_batch_lengths, int64_t batch_size,
                                         int64_t ga_steps, bool keep_mini_batch = false, int64_t mini_batch_size = 0,
                                         int64_t pipeline_model_parallel_size = 1,
                                         int64_t virtual_pipeline_model_parallel_size = 0);

}  // namespace roll::rl
