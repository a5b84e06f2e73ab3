#include "roll/workers/dynamic_micro_batches.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "roll/comm/process_group.h"
#include "roll/core/error.h"
#include "roll/rl/dynamic_batching.h"
#include "roll/workers/dp_sum.h"

namespace roll::workers {

MicroBatchRows dynamic_micro_batches(const at::Tensor& attention_mask, const TokenBudget& budget,
                                     comm::ProcessGroup* group, const std::string& log_prefix) {
  const int64_t rows = attention_mask.size(0), width = attention_mask.size(1);
  // Equal row counts first: the length exchange below is one all-reduce of world x rows values.
  check_equal_rows(rows, group, log_prefix);
  MicroBatchRows out;
  if (rows == 0) return out;
  const at::Tensor lens_t = attention_mask.sum(-1).to(at::kLong).contiguous();
  const std::vector<int64_t> lens(lens_t.data_ptr<int64_t>(), lens_t.data_ptr<int64_t>() + rows);
  std::vector<int64_t> order(static_cast<size_t>(rows));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return lens[a] < lens[b]; });

  const int world = group ? group->size() : 1, rank = group ? group->rank() : 0;
  std::vector<double> table(static_cast<size_t>(world * rows), 0.0);  // rank r's sorted lengths in row r
  for (int64_t j = 0; j < rows; ++j) table[static_cast<size_t>(rank * rows + j)] = static_cast<double>(lens[order[j]]);
  table = dp_sum(table, group);
  std::vector<std::vector<int64_t>> shards(static_cast<size_t>(world));
  int64_t longest = 0;
  for (int r = 0; r < world; ++r)
    for (int64_t j = 0; j < rows; ++j) {
      shards[static_cast<size_t>(r)].push_back(static_cast<int64_t>(table[static_cast<size_t>(r * rows + j)]));
      longest = std::max(longest, shards[static_cast<size_t>(r)].back());
    }
  const int64_t longest_rounded = (longest + budget.round - 1) / budget.round * budget.round;
  if (longest_rounded > budget.max_tokens)
    throw Error(fmt::format("{}: a sequence of {} tokens ({} rounded to sequence_length_round) does not fit in {} = {}",
                            log_prefix, longest, longest_rounded, budget.max_tokens_key, budget.max_tokens));
  const rl::DynamicBatchingPlan plan = rl::plan_sorted_shards(shards, width, budget.max_tokens, budget.round);

  int64_t actual = 0;
  for (size_t i = 0; i < plan.micro_batch_indices.size(); ++i) {
    const auto [start, end] = plan.micro_batch_indices[i];
    out.micro_batches.emplace_back(order.begin() + start, order.begin() + end);
    actual += (end - start) * plan.micro_batch_lengths[i];
  }
  // This rank's shares: the ranks' sums are ROLL's global counts (every rank runs `actual` tokens).
  const int64_t valid = std::accumulate(lens.begin(), lens.end(), int64_t{0});
  const int64_t origin = rows * width;
  rl::add_padding_metrics(out.metrics, "dynamic_batching/" + log_prefix, valid, origin, actual, "@sum");
  return out;
}

MicroBatchRows forward_micro_batches(const at::Tensor& attention_mask, int64_t infer_batch_size,
                                     const std::optional<TokenBudget>& budget, comm::ProcessGroup* group,
                                     const std::string& log_prefix) {
  if (budget) return dynamic_micro_batches(attention_mask, *budget, group, log_prefix);
  return fixed_micro_batches(attention_mask.size(0), infer_batch_size);
}

std::vector<train::MiniBatchPlan> dynamic_mini_batches(const MicroBatchRows& micro, int64_t ga, int64_t epochs) {
  if (ga < 1 || epochs < 1)
    throw Error(fmt::format("dynamic batching: gradient_accumulation_steps ({}) and ppo_epochs ({}) must be >= 1", ga,
                            epochs));
  std::vector<train::MiniBatchPlan> steps;
  for (size_t i = 0; i < micro.micro_batches.size(); i += static_cast<size_t>(ga)) {
    train::MiniBatchPlan step;
    const size_t end = std::min(micro.micro_batches.size(), i + static_cast<size_t>(ga));
    step.micro_batches.assign(micro.micro_batches.begin() + static_cast<std::ptrdiff_t>(i),
                              micro.micro_batches.begin() + static_cast<std::ptrdiff_t>(end));
    steps.push_back(std::move(step));
  }
  std::vector<train::MiniBatchPlan> out;
  for (int64_t e = 0; e < epochs; ++e) out.insert(out.end(), steps.begin(), steps.end());
  return out;
}

double dynamic_accumulation_factor(int64_t num_micro_batches, int64_t ga) {
  if (num_micro_batches < 1 || ga < 1)
    throw Error(fmt::format("dynamic batching: a mini-batch of {} micro-batches with gradient_accumulation_steps {}",
                            num_micro_batches, ga));
  return static_cast<double>(ga) / static_cast<double>(num_micro_batches);
}

}  // namespace roll::workers
