#pragma once
// Forward-only passes over a worker's batch, as ROLL's strategy.forward_step cuts them: the
// model inputs read from the Batch with errors that name the role and the tensor, the
// infer_batch_size micro-batches (or dynamic ones, dynamic_micro_batches.h), and
// compute_log_probs (actor, reference) on top of them.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "roll/core/batch.h"
#include "roll/model/transformer.h"
#include "roll/rl/metrics.h"

namespace roll::workers {

// The batch's tensor `key`; an error names the role, the key and the tensors the batch has.
const at::Tensor& batch_tensor(const Batch& batch, const std::string& key, const std::string& role);

// input_ids, attention_mask, position_ids: [B, S] each (position_ids as the pipeline wrote them).
struct ForwardInputs {
  at::Tensor input_ids, attention_mask, position_ids;
  ForwardInputs rows(int64_t begin, int64_t end) const;
  ForwardInputs select(const std::vector<int64_t>& rows) const;  // views when the rows are contiguous
};
ForwardInputs forward_inputs(const Batch& batch, const std::string& role);
// Row numbers as an int64 index tensor (index_select over a batch's rows).
at::Tensor row_index(const std::vector<int64_t>& rows);

// [B, S-1] mask of the per-token grid: response_mask[:, 1:] (ROLL's `m`), or attention_mask[:, 1:]
// when the batch has no response_mask (prompt-only batches). Float.
at::Tensor token_mask(const Batch& batch, const std::string& role);

// [B, S-1] tensor `key` of the batch, float; an error names the role, the key and the shapes.
at::Tensor token_tensor(const Batch& batch, const std::string& key, const std::string& role);

// ROLL's forward_step split: max(rows / infer_batch_size, 1) contiguous parts with
// np.array_split sizes (so a part may hold more than infer_batch_size rows, as in ROLL).
std::vector<std::pair<int64_t, int64_t>> infer_micro_batches(int64_t rows, int64_t infer_batch_size);

// The micro-batches of a pass as rows of the worker's batch (each row in exactly one), with the
// metrics of how they were planned (empty for the infer_batch_size split).
struct MicroBatchRows {
  std::vector<std::vector<int64_t>> micro_batches;
  rl::MetricMap metrics;
};
// infer_micro_batches as row lists.
MicroBatchRows fixed_micro_batches(int64_t rows, int64_t infer_batch_size);

// Runs the model on some rows; must fill both log_probs and entropy.
using LogProbForward = std::function<model::TokenLogProbs(const ForwardInputs& in)>;

// compute_log_probs without grad: `log_probs` and `entropy` [B, S-1] (fp32, both × token_mask) in
// the batch's row order, the forward run on each micro-batch's rows. meta["metrics"] holds
// micro.metrics.
Batch forward_log_probs(const Batch& batch, const MicroBatchRows& micro, const LogProbForward& forward,
                        const std::string& role);

}  // namespace roll::workers
