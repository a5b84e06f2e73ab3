#include "roll/pipeline/train_infer_step.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "roll/rl/train_infer.h"
#include "roll/workers/loss_params_from_config.h"

namespace roll::pipeline {

std::map<std::string, double> apply_train_infer_correction(const config::PipelineConfig& c, Batch& batch) {
  std::map<std::string, double> m;
  if (!c.enable_old_logprobs_recompute || !batch.has_tensor("old_log_probs")) return m;
  const at::Tensor resp = batch.tensor("response_mask").slice(1, 1).to(at::kFloat);
  const at::Tensor infer = batch.has_tensor("infer_logprobs") ? batch.tensor("infer_logprobs") : at::Tensor();
  const rl::TrainInferParams params = workers::train_infer_params(c);
  rl::TrainInferResult r = rl::train_infer_correction(resp, batch.tensor("old_log_probs"), infer, params);
  if (params.is_weight.enabled) batch.set_tensor("train_infer_is_weight", r.is_weight);
  if (std::any_of(params.filters.begin(), params.filters.end(), [](const auto& f) { return f.enabled; })) {
    at::Tensor rm = batch.tensor("response_mask").clone();
    rm.slice(1, 1).mul_(r.filter_mask.to(rm.scalar_type()));
    batch.set_tensor("response_mask", rm);
    if (batch.has_tensor("final_response_mask"))
      batch.set_tensor("final_response_mask", batch.tensor("final_response_mask") * r.filter_mask);
  }
  for (auto& [k, v] : r.metrics.reduce()) m[k] = v;
  return m;
}

}  // namespace roll::pipeline
