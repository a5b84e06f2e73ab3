#include "roll/workers/forward_batches.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "roll/core/error.h"
#include "roll/workers/metrics_json.h"

namespace roll::workers {
namespace {

std::string shape(const at::Tensor& t) { return c10::str(t.sizes()); }

}  // namespace

const at::Tensor& batch_tensor(const Batch& batch, const std::string& key, const std::string& role) {
  if (!batch.has_tensor(key))
    throw Error(fmt::format("{}: the batch has no tensor '{}' (tensors: [{}])", role, key,
                            fmt::join(batch.tensor_keys(), ", ")));
  return batch.tensor(key);
}

ForwardInputs ForwardInputs::rows(int64_t begin, int64_t end) const {
  return {input_ids.slice(0, begin, end), attention_mask.slice(0, begin, end), position_ids.slice(0, begin, end)};
}

ForwardInputs ForwardInputs::select(const std::vector<int64_t>& rows) const {
  bool contiguous = !rows.empty();
  for (size_t i = 1; i < rows.size() && contiguous; ++i) contiguous = rows[i] == rows[i - 1] + 1;
  if (contiguous) return this->rows(rows.front(), rows.back() + 1);
  const at::Tensor idx = row_index(rows);
  return {input_ids.index_select(0, idx), attention_mask.index_select(0, idx), position_ids.index_select(0, idx)};
}

at::Tensor row_index(const std::vector<int64_t>& rows) {
  return at::tensor(rows, at::TensorOptions().dtype(at::kLong));
}

ForwardInputs forward_inputs(const Batch& batch, const std::string& role) {
  ForwardInputs in{batch_tensor(batch, "input_ids", role), batch_tensor(batch, "attention_mask", role),
                   batch_tensor(batch, "position_ids", role)};
  if (in.input_ids.dim() != 2 || in.input_ids.size(1) < 2)
    throw Error(fmt::format("{}: input_ids must be [B, S] with S >= 2, got {}", role, shape(in.input_ids)));
  for (const auto& [name, t] : {std::pair<const char*, const at::Tensor&>{"attention_mask", in.attention_mask},
                                {"position_ids", in.position_ids}})
    if (!t.sizes().equals(in.input_ids.sizes()))
      throw Error(fmt::format("{}: {} has shape {}, input_ids {}", role, name, shape(t), shape(in.input_ids)));
  return in;
}

at::Tensor token_mask(const Batch& batch, const std::string& role) {
  const char* key = batch.has_tensor("response_mask") ? "response_mask" : "attention_mask";
  const at::Tensor& full = batch_tensor(batch, key, role);
  if (full.dim() != 2 || full.size(1) < 2)
    throw Error(fmt::format("{}: {} must be [B, S] with S >= 2, got {}", role, key, shape(full)));
  return full.slice(1, 1, full.size(1)).to(at::kFloat);
}

at::Tensor token_tensor(const Batch& batch, const std::string& key, const std::string& role) {
  const at::Tensor& t = batch_tensor(batch, key, role);
  const at::Tensor& ids = batch_tensor(batch, "input_ids", role);
  if (t.dim() != 2 || t.size(0) != ids.size(0) || t.size(1) != ids.size(1) - 1)
    throw Error(fmt::format("{}: {} must be [B, S-1] = [{}, {}] (aligned with predicting token t+1), got {}", role,
                            key, ids.size(0), ids.size(1) - 1, shape(t)));
  return t.to(at::kFloat);
}

std::vector<std::pair<int64_t, int64_t>> infer_micro_batches(int64_t rows, int64_t infer_batch_size) {
  if (infer_batch_size < 1) throw Error(fmt::format("infer_batch_size must be >= 1, got {}", infer_batch_size));
  std::vector<std::pair<int64_t, int64_t>> out;
  if (rows <= 0) return out;
  const int64_t n = std::max<int64_t>(rows / infer_batch_size, 1);
  int64_t begin = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t size = rows / n + (i < rows % n ? 1 : 0);
    out.emplace_back(begin, begin + size);
    begin += size;
  }
  return out;
}

MicroBatchRows fixed_micro_batches(int64_t rows, int64_t infer_batch_size) {
  MicroBatchRows out;
  for (const auto& [b, e] : infer_micro_batches(rows, infer_batch_size)) {
    out.micro_batches.emplace_back();
    for (int64_t r = b; r < e; ++r) out.micro_batches.back().push_back(r);
  }
  return out;
}

Batch forward_log_probs(const Batch& batch, const MicroBatchRows& micro, const LogProbForward& forward,
                        const std::string& role) {
  Batch result(batch.size());
  result.meta["metrics"] = metrics_to_json(micro.metrics);
  if (batch.empty()) return result;
  const ForwardInputs in = forward_inputs(batch, role);
  const at::Tensor m = token_mask(batch, role);
  at::NoGradGuard no_grad;
  at::Tensor lp = at::zeros_like(m), ent = at::zeros_like(m);
  for (const std::vector<int64_t>& rows : micro.micro_batches) {
    model::TokenLogProbs out = forward(in.select(rows));
    const at::Tensor idx = at::tensor(rows, at::TensorOptions().dtype(at::kLong));
    lp.index_copy_(0, idx, out.log_probs.to(at::kFloat));
    if (out.entropy.defined()) ent.index_copy_(0, idx, out.entropy.to(at::kFloat));
    else ent = at::Tensor();  // a forward without entropy (the reference pass)
  }
  // ROLL masks both with the response mask (op_compute_log_probs / op_compute_entropy).
  result.set_tensor("log_probs", lp * m);
  if (ent.defined()) result.set_tensor("entropy", ent * m);
  return result;
}

}  // namespace roll::workers
