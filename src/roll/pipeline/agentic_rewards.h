#pragma once
// The agentic step's response-level rewards from a rollout batch (docs/rl.md; 6.3 step 5): ROLL's
// compute_discounted_returns and compute_response_level_rewards with the batch's columns as the
// estimators need them. Kept out of the step loop so the wiring is testable on a hand-made batch.
#include <string>
#include <vector>

#include "roll/core/batch.h"
#include "roll/rl/agentic_reward.h"

namespace roll::config {
struct PipelineConfig;
}

namespace roll::pipeline {

// The cells of a non-tensor column as strings (strings as they are, other cells as JSON text).
std::vector<std::string> string_column(const Batch& batch, const std::string& key);

// True for the estimators that learn from per-turn rewards (gigpo, step_reinforce).
bool uses_step_rewards(const config::PipelineConfig& c);

// gigpo / step_reinforce: tensor `step_rewards` [B] = the discounted step returns of every sample
// (per traj_id, ordered by `step`, γ = step_reward_gamma) from columns traj_id, step and
// step_scores. Before batch adjust, as ROLL. A batch without per-turn samples (TrajEnvManager's)
// is a ConfigError naming adv_estimator. Other estimators: nothing.
void add_step_returns(Batch& batch, const config::PipelineConfig& c);

// reward_normalization, episode/step reward weights, reward_clip and adv_estimator of the config.
rl::AgenticRewardParams agentic_reward_params(const config::PipelineConfig& c);

// rl::compute_response_level_rewards over `batch`: tensor `scores`; for gigpo also column
// episode_scores, tensor step_rewards and columns traj_group_id, state_hash; step_reinforce
// step_rewards; and the grouping columns traj_group_id, tags, traj_id where present.
// With overlong_reward.enable, each turn's DAPO overlong penalty is added to its reward first.
rl::AgenticRewardResult agentic_response_rewards(const Batch& batch, const config::PipelineConfig& c);

// DAPO's overlong penalty of every turn of a step-wise batch (spec: rl/overlong.h), against its
// env's max_tokens_per_step capped by train_env_manager's max_new_tokens; with the two
// critic/overlong_* metrics.
struct OverlongShaping {
  at::Tensor penalty;  // [B], <= 0
  rl::MetricMap metrics;
};
OverlongShaping overlong_turn_penalty(const Batch& batch, const config::PipelineConfig& c);

}  // namespace roll::pipeline
