#include "roll/pipeline/agentic_rewards.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <limits>
#include <map>

#include "roll/agentic/env_layout.h"
#include "roll/config/schema.h"
#include "roll/core/error.h"
#include "roll/rl/overlong.h"

namespace roll::pipeline {
namespace {

rl::AdvEstimator estimator_of(const config::PipelineConfig& c) { return rl::parse_adv_estimator(c.adv_estimator); }

// Per-turn columns come from StepEnvManager; a trajectory batch has none of them.
const NonTensorColumn& per_turn_column(const Batch& batch, const std::string& key, const config::PipelineConfig& c) {
  if (!batch.has_column(key))
    throw ConfigError("adv_estimator",
                      fmt::format("'{}' learns from per-turn samples, but the rollout batch has no '{}' column: use "
                                  "env_manager_cls StepEnvManager in custom_envs",
                                  c.adv_estimator, key));
  return batch.column(key);
}

std::vector<double> number_column(const Batch& batch, const std::string& key, const config::PipelineConfig& c) {
  std::vector<double> out;
  for (const Cell& cell : per_turn_column(batch, key, c)) {
    if (!cell.is_number())
      throw Error(fmt::format("agentic rewards: column '{}' holds {} where a number (one turn's value) belongs", key,
                              cell.dump()));
    out.push_back(cell.get<double>());
  }
  return out;
}

}  // namespace

std::vector<std::string> string_column(const Batch& b, const std::string& key) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < b.size(); ++i) {
    const Cell& c = b.cell(key, i);
    out.push_back(c.is_string() ? c.get<std::string>() : c.dump());
  }
  return out;
}

bool uses_step_rewards(const config::PipelineConfig& c) {
  const rl::AdvEstimator e = estimator_of(c);
  return e == rl::AdvEstimator::gigpo || e == rl::AdvEstimator::step_reinforce;
}

void add_step_returns(Batch& batch, const config::PipelineConfig& c) {
  if (!uses_step_rewards(c)) return;
  std::vector<int64_t> steps;
  for (double s : number_column(batch, "step", c)) steps.push_back(static_cast<int64_t>(s));
  const std::vector<double> scores = number_column(batch, "step_scores", c);
  per_turn_column(batch, "traj_id", c);
  batch.set_tensor("step_rewards",
                   rl::discounted_step_returns(string_column(batch, "traj_id"), steps,
                                               at::tensor(scores, at::kDouble), c.step_reward_gamma));
}

rl::AgenticRewardParams agentic_reward_params(const config::PipelineConfig& c) {
  rl::AgenticRewardParams rp;
  rp.adv_estimator = estimator_of(c);
  rp.reward_normalization.grouping = c.reward_normalization.grouping;
  rp.reward_normalization.method = c.reward_normalization.method;
  if (c.reward_normalization.norm_mean_type)
    rp.reward_normalization.norm_mean_type = rl::parse_norm_type(*c.reward_normalization.norm_mean_type);
  if (c.reward_normalization.norm_std_type)
    rp.reward_normalization.norm_std_type = rl::parse_norm_type(*c.reward_normalization.norm_std_type);
  rp.episode_reward_weight = c.episode_reward_weight;
  rp.step_reward_weight = c.step_reward_weight;
  rp.reward_clip = c.reward_clip;
  return rp;
}

rl::AgenticRewardResult agentic_response_rewards(const Batch& batch, const config::PipelineConfig& c) {
  const rl::AgenticRewardParams rp = agentic_reward_params(c);
  rl::AgenticRewardInputs ri;
  ri.scores = batch.tensor("scores");
  for (const char* key : {"traj_group_id", "tags", "traj_id", "state_hash"})
    if (batch.has_column(key)) ri.columns[key] = string_column(batch, key);
  if (uses_step_rewards(c)) {
    if (!batch.has_tensor("step_rewards"))
      throw Error("agentic rewards: tensor 'step_rewards' is missing (add_step_returns runs before batch adjust)");
    ri.step_rewards = batch.tensor("step_rewards");
  }
  if (rp.adv_estimator == rl::AdvEstimator::gigpo) {
    ri.episode_scores = at::tensor(number_column(batch, "episode_scores", c), at::kDouble).to(at::kFloat);
    per_turn_column(batch, "state_hash", c);
  }
  rl::MetricMap overlong;
  if (c.overlong_reward.enable) {
    // The penalty joins each turn's own reward before normalisation: the step return for the
    // per-turn estimators, the turn's score otherwise.
    const OverlongShaping shaped = overlong_turn_penalty(batch, c);
    overlong = shaped.metrics;
    if (uses_step_rewards(c))
      ri.step_rewards = ri.step_rewards + shaped.penalty.to(ri.step_rewards.scalar_type());
    else
      ri.scores = (ri.scores.dim() == 2 ? ri.scores.sum(-1) : ri.scores) + shaped.penalty.to(ri.scores.scalar_type());
  }
  rl::AgenticRewardResult out = rl::compute_response_level_rewards(ri, rp);
  out.metrics.merge(overlong);
  return out;
}

OverlongShaping overlong_turn_penalty(const Batch& batch, const config::PipelineConfig& c) {
  const at::Tensor lengths = batch.tensor("response_mask").sum(1).to(at::kFloat);
  const std::vector<std::string> tags = string_column(batch, "tags");
  rl::OverlongParams p{c.overlong_reward.enable, c.overlong_reward.buffer_len, c.overlong_reward.penalty_factor};
  OverlongShaping out{at::zeros({batch.size()}, at::kFloat), {}};
  // A turn's limit is its env's max_tokens_per_step (capped by the fleet's max_new_tokens), so the
  // penalty is computed per tag.
  std::map<std::string, std::vector<int64_t>> rows_of_tag;
  for (int64_t i = 0; i < batch.size(); ++i) rows_of_tag[tags[static_cast<size_t>(i)]].push_back(i);
  const int64_t fleet_limit = c.train_env_manager.worker.generating_args
                                  ? c.train_env_manager.worker.generating_args->max_new_tokens
                                  : std::numeric_limits<int64_t>::max();
  for (const auto& [tag, rows] : rows_of_tag) {
    const int64_t limit = std::min(agentic::env_spec_of(c, tag).max_tokens_per_step, fleet_limit);
    const at::Tensor idx = at::tensor(rows, at::kLong);
    out.penalty.index_copy_(0, idx, rl::overlong_penalty(lengths.index_select(0, idx), limit, p));
  }
  out.metrics = rl::overlong_metrics(out.penalty);
  return out;
}

}  // namespace roll::pipeline
