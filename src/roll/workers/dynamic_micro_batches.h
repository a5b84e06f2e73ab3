#pragma once
// ROLL's dynamic batching on one worker's rows (use_dynamic_batching_in_train / _in_infer,
// docs/workers.md): micro-batches of similar lengths, each holding at most
// max_tokens_per_microbatch tokens once its rows are padded to the longest (rounded up to
// sequence_length_round), instead of per_device_train_batch_size / infer_batch_size rows.
//
// ROLL's driver sorts the whole batch by length and deals it round-robin to the data-parallel
// ranks. Here the dispatcher has already split the batch, so each rank sorts its own rows and the
// ranks exchange their sorted lengths: every rank walks the same rl::plan_sorted_shards and runs
// the same number of micro-batches (ZeRO-3 gathers weights in every forward and backward, so the
// ranks must run as many), the j-th shortest rows of all ranks sharing one micro-batch index.
// Each micro-batch then runs on its used columns (trim_padding.h), which with right-padded rows is
// at most ROLL's rounded micro-batch length.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "roll/train/batch_plan.h"
#include "roll/workers/forward_batches.h"
#include "roll/workers/token_budget.h"

namespace roll::comm {
class ProcessGroup;
}

namespace roll::workers {

// The plan over this rank's rows (lengths: attention_mask row sums, as ROLL). Micro-batches hold
// rows in ascending length. metrics: this rank's share of
// dynamic_batching/<log_prefix>/{valid_tokens, actual_tokens_origin, actual_tokens,
// removed_padding_tokens}@sum (summed over the ranks by the pipeline: ROLL's global counts) and
// removed_padding_ratio. Collective over `group` (null: this rank alone); a sequence longer than
// the budget is an error naming max_tokens_key on every rank.
MicroBatchRows dynamic_micro_batches(const at::Tensor& attention_mask, const TokenBudget& budget,
                                     comm::ProcessGroup* group, const std::string& log_prefix);

// A forward-only pass: dynamic_micro_batches under `budget`, else fixed_micro_batches.
MicroBatchRows forward_micro_batches(const at::Tensor& attention_mask, int64_t infer_batch_size,
                                     const std::optional<TokenBudget>& budget, comm::ProcessGroup* group,
                                     const std::string& log_prefix);

// Training: gradient_accumulation_steps consecutive micro-batches per optimizer step (the last may
// hold fewer), the same steps in each of `epochs` passes: ROLL does not shuffle dynamic batches.
std::vector<train::MiniBatchPlan> dynamic_mini_batches(const MicroBatchRows& micro, int64_t gradient_accumulation_steps,
                                                       int64_t epochs);

// The factor on each loss of a dynamic mini-batch of `num_micro_batches`: the strategy divides every
// micro-batch loss by gradient_accumulation_steps, where ROLL (Megatron's num_microbatches) divides
// by the mini-batch's own count; with the loss scale and the global normalisers the gradient is
// then that of the whole mini-batch, as with fixed batching.
double dynamic_accumulation_factor(int64_t num_micro_batches, int64_t gradient_accumulation_steps);

}  // namespace roll::workers
