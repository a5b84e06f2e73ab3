#include "roll/pipeline/rlvr_step_metrics.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "roll/core/log.h"
#include "roll/rl/data_metrics.h"

namespace roll::pipeline {

std::map<std::string, double> rollout_data_metrics(const Batch& b, int64_t n) {
  rl::DataMetricsInputs in;
  in.response_mask = b.tensor("response_mask").slice(1, 1).to(at::kFloat);
  in.final_response_mask = b.tensor("final_response_mask");
  in.prompt_mask = b.tensor("prompt_mask");
  in.max_response_length = b.tensor("responses").size(1);
  in.scores = b.tensor("scores").to(at::kFloat);
  in.token_level_rewards = b.tensor("token_level_rewards");
  in.advantages = b.tensor("advantages");
  in.raw_advantages = b.tensor("raw_advantages");
  in.returns = b.tensor("returns");
  if (b.has_tensor("values")) in.values = b.tensor("values");
  rl::MetricMap all = rl::token_metrics(in);
  all.merge(rl::value_metrics(in));
  all.merge(rl::group_metrics(in, n));
  return all.reduce();
}

std::map<std::string, double> validation_metrics(const Batch& scored) {
  std::map<std::string, std::pair<double, int64_t>> per_tag;
  const at::Tensor s = scored.tensor("scores").to(at::kFloat);
  double correct = 0;
  for (int64_t i = 0; i < scored.size(); ++i) {
    const std::string tag = scored.has_column("tag") && scored.cell("tag", i).is_string() ? scored.get_string("tag", i)
                                                                                         : scored.get_string("domain", i);
    const double ok = s[i].item<double>() == 1.0 ? 1.0 : 0.0;
    per_tag[tag].first += ok;
    ++per_tag[tag].second;
    correct += ok;
  }
  std::map<std::string, double> m;
  for (const auto& [tag, v] : per_tag) {
    m["val_correct/" + tag + "/mean"] = v.first / static_cast<double>(v.second);
    log::info("val_correct/{}:  {:.4f}", tag, v.first / static_cast<double>(v.second));
  }
  m["val_correct/all/mean"] = scored.size() ? correct / static_cast<double>(scored.size()) : 0.0;
  return m;
}

void log_samples(const Batch& batch, int64_t step, int64_t logging_steps) {
  if (logging_steps <= 0 || step % logging_steps != 0) return;
  for (int64_t i = 0; i < std::min<int64_t>(batch.size(), 2); ++i)
    log::info("step {} sample {}: response {:?} score {}", step, i, batch.get_string("response_text", i).substr(0, 200),
              batch.tensor("scores")[i].item<double>());
}

}  // namespace roll::pipeline
