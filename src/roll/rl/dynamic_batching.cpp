#include "roll/rl/dynamic_batching.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "roll/core/error.h"

namespace roll::rl {

void split_ranges_to_pp_multiple(std::vector<Range>& ranges, std::vector<int64_t>& lengths, int64_t pp,
                                 int64_t mini_batch_index) {
  if (pp <= 0) throw Error(fmt::format("pipeline_model_parallel_size must be positive, got {}", pp));
  int64_t count = static_cast<int64_t>(ranges.size());
  int64_t target = (count + pp - 1) / pp * pp;
  for (int64_t need = target - count; need > 0; --need) {
    // The largest range, the first one among equals (Python's stable sort, reverse=True).
    int64_t best = -1, best_size = 1;
    for (int64_t i = 0; i < static_cast<int64_t>(ranges.size()); ++i) {
      int64_t size = ranges[i][1] - ranges[i][0];
      if (size > best_size) {
        best = i;
        best_size = size;
      }
    }
    if (best < 0)
      throw Error(fmt::format("logical mini-batch {} has {} micro-batches and cannot be split into a multiple of "
                              "pipeline_model_parallel_size={}; there are not enough multi-sample ranges",
                              mini_batch_index, ranges.size(), pp));
    auto [start, end] = ranges[best];
    int64_t mid = start + (end - start) / 2;
    int64_t len = lengths[best];
    ranges[best] = {start, mid};
    ranges.insert(ranges.begin() + best + 1, Range{mid, end});
    lengths.insert(lengths.begin() + best + 1, len);
  }
}

DynamicBatchingPlan plan_sorted_shards(const std::vector<std::vector<int64_t>>& shard_lens, int64_t padded_width,
                                       int64_t max_tokens, int64_t round, int64_t pp, int64_t vpp,
                                       std::string_view log_prefix) {
  const int64_t dp = static_cast<int64_t>(shard_lens.size());
  if (dp <= 0 || round <= 0 || max_tokens <= 0)
    throw Error(fmt::format("dynamic batching needs positive dp_size ({}), sequence_length_round ({}) and "
                            "max_tokens_per_microbatch ({})",
                            dp, round, max_tokens));
  if (pp <= 0) throw Error(fmt::format("pipeline_model_parallel_size must be a positive integer, got {}", pp));
  const int64_t shard = static_cast<int64_t>(shard_lens.front().size());
  for (const auto& s : shard_lens)
    if (static_cast<int64_t>(s.size()) != shard)
      throw Error(fmt::format("dynamic batching: shards of {} and {} samples; every dp rank needs as many",
                              shard, s.size()));
  if (shard == 0) throw Error("dynamic batching: no samples to plan");

  DynamicBatchingPlan plan;
  plan.micro_batch_indices = {Range{0, 0}};
  plan.micro_batch_lengths = {0};
  int64_t run_max = round;  // a micro-batch is at least `round` long
  for (int64_t j = 0; j < shard; ++j) {
    int64_t lj = 0;
    for (const auto& s : shard_lens) lj = std::max(lj, s[static_cast<size_t>(j)]);
    lj = (lj + round - 1) / round * round;
    if (lj > max_tokens)
      throw Error(fmt::format("dynamic batching: a sequence padded to {} tokens (sequence_length_round {}) exceeds "
                              "max_tokens_per_microbatch {}",
                              lj, round, max_tokens));
    Range& cur = plan.micro_batch_indices.back();
    int64_t size = cur[1] - cur[0] + 1;
    run_max = std::max(run_max, lj);
    if (size * run_max <= max_tokens) {
      cur[1] += 1;
      plan.micro_batch_lengths.back() = run_max;
    } else {
      plan.micro_batch_indices.push_back({j, j + 1});
      run_max = lj;
      plan.micro_batch_lengths.push_back(run_max);
    }
  }
  int64_t total = 0;
  for (size_t i = 0; i < plan.micro_batch_indices.size(); ++i)
    total += (plan.micro_batch_indices[i][1] - plan.micro_batch_indices[i][0]) * plan.micro_batch_lengths[i];
  if (pp > 1 && vpp > 0) {
    if (pp > shard)
      throw Error(fmt::format("pipeline_model_parallel_size {} is larger than the {} sequences of one dp rank", pp,
                              shard));
    split_ranges_to_pp_multiple(plan.micro_batch_indices, plan.micro_batch_lengths, pp, 0);
  }
  int64_t valid = 0;
  for (const auto& s : shard_lens) valid = std::accumulate(s.begin(), s.end(), valid);
  int64_t origin = dp * shard * padded_width;
  int64_t actual = total * dp;
  std::string prefix = log_prefix.empty() ? "dynamic_batching" : fmt::format("dynamic_batching/{}", log_prefix);
  add_padding_metrics(plan.metrics, prefix, valid, origin, actual);
  return plan;
}

void add_padding_metrics(MetricMap& metrics, const std::string& prefix, int64_t valid, int64_t origin, int64_t actual,
                         std::string_view sum_tag) {
  const std::string tag(sum_tag);
  metrics.add(prefix + "/valid_tokens" + tag, static_cast<double>(valid));
  metrics.add(prefix + "/actual_tokens_origin" + tag, static_cast<double>(origin));
  metrics.add(prefix + "/actual_tokens" + tag, static_cast<double>(actual));
  metrics.add(prefix + "/removed_padding_tokens" + tag, static_cast<double>(origin - actual));
  metrics.add(prefix + "/removed_padding_ratio",
              origin > 0 ? static_cast<double>(origin - actual) / static_cast<double>(origin) : 0.0);
}

DynamicBatchingPlan dynamic_batching_shard(const std::vector<int64_t>& seq_lens, int64_t padded_width, int64_t dp,
                                           int64_t max_tokens, int64_t round, int64_t pp, int64_t vpp,
                                           std::string_view log_prefix) {
  const int64_t B = static_cast<int64_t>(seq_lens.size());
  if (dp <= 0) throw Error(fmt::format("dynamic batching needs a positive dp_size, got {}", dp));
  if (B == 0 || B % dp != 0)
    throw Error(fmt::format("dynamic batching: {} samples do not split evenly over dp_size {}", B, dp));
  std::vector<int64_t> sorted(B);
  std::iota(sorted.begin(), sorted.end(), 0);
  std::stable_sort(sorted.begin(), sorted.end(), [&](int64_t a, int64_t b) { return seq_lens[a] < seq_lens[b]; });
  const int64_t shard = B / dp;
  std::vector<int64_t> order;
  std::vector<std::vector<int64_t>> shard_lens(static_cast<size_t>(dp));
  for (int64_t r = 0; r < dp; ++r)
    for (int64_t j = 0; j < shard; ++j) {
      order.push_back(sorted[r + j * dp]);
      shard_lens[static_cast<size_t>(r)].push_back(seq_lens[order.back()]);
    }
  DynamicBatchingPlan plan = plan_sorted_shards(shard_lens, padded_width, max_tokens, round, pp, vpp, log_prefix);
  plan.order = std::move(order);
  return plan;
}

std::vector<MiniBatch> make_mini_batches(const std::vector<Range>& indices, const std::vector<int64_t>& lengths,
                                         int64_t batch_size, int64_t ga_steps, bool keep_mini_batch,
                                         int64_t mini_batch_size, int64_t pp, int64_t vpp) {
  if (ga_steps <= 0) throw Error(fmt::format("ga_steps must be positive, got {}", ga_steps));
  if (indices.size() != lengths.size())
    throw Error(fmt::format("micro_batch_indices has {} ranges but micro_batch_lengths has {}", indices.size(),
                            lengths.size()));
  // Validate before grouping so a malformed layout cannot drop or duplicate samples.
  int64_t expect = 0;
  for (size_t i = 0; i < indices.size(); ++i) {
    auto [s, e] = indices[i];
    if (s != expect)
      throw Error(fmt::format("global micro-batch ranges must be sorted and contiguous: expected start {}, got {} at "
                              "range {}",
                              expect, s, i));
    if (!(s < e && e <= batch_size))
      throw Error(fmt::format("invalid global micro-batch range [{}, {}) for batch size {}", s, e, batch_size));
    if (lengths[i] <= 0) throw Error(fmt::format("micro-batch length must be positive, got {}", lengths[i]));
    expect = e;
  }
  if (expect != batch_size)
    throw Error(fmt::format("global micro-batch ranges must cover the complete local batch: last end {}, batch size {}",
                            expect, batch_size));

  std::vector<std::vector<Range>> gi;
  std::vector<std::vector<int64_t>> gl;
  if (keep_mini_batch) {
    if (mini_batch_size <= 0)
      throw Error(fmt::format("mini_batch_size must be positive when keep_mini_batch is enabled, got {}",
                              mini_batch_size));
    if (batch_size % mini_batch_size != 0)
      throw Error(fmt::format("batch size {} must be divisible by mini_batch_size {} when keep_mini_batch is enabled",
                              batch_size, mini_batch_size));
    gi.resize(batch_size / mini_batch_size);
    gl.resize(gi.size());
    for (size_t i = 0; i < indices.size(); ++i) {
      auto [s, e] = indices[i];
      while (s < e) {
        int64_t g = s / mini_batch_size;
        int64_t ge = std::min(e, (g + 1) * mini_batch_size);
        gi[g].push_back({s, ge});
        gl[g].push_back(lengths[i]);
        s = ge;
      }
    }
    if (pp > 1 && vpp > 0)
      for (size_t g = 0; g < gi.size(); ++g) split_ranges_to_pp_multiple(gi[g], gl[g], pp, static_cast<int64_t>(g));
  } else {
    for (size_t i = 0; i < indices.size(); i += ga_steps) {
      size_t e = std::min(indices.size(), i + ga_steps);
      gi.emplace_back(indices.begin() + i, indices.begin() + e);
      gl.emplace_back(lengths.begin() + i, lengths.begin() + e);
    }
  }
  std::vector<MiniBatch> out;
  for (size_t g = 0; g < gi.size(); ++g) {
    MiniBatch mb;
    mb.start = gi[g].front()[0];
    mb.end = gi[g].back()[1];
    for (const Range& r : gi[g]) mb.micro_batch_indices.push_back({r[0] - mb.start, r[1] - mb.start});
    mb.micro_batch_lengths = gl[g];
    out.push_back(std::move(mb));
  }
  return out;
}

}  // namespace roll::rl
