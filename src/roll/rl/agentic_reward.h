#pragma once
// Agentic reward shaping and normalisation (docs/rl.md): ROLL's compute_response_level_rewards,
// agentic_reward_norm, build_state_group and compute_discounted_returns.
#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "roll/rl/estimator.h"
#include "roll/rl/grouping.h"
#include "roll/rl/metrics.h"

namespace roll::rl {

// `reward_normalization: {grouping, method, norm_mean_type, norm_std_type}`. `method` is deprecated in
// ROLL and only fills whichever type is unset (nullopt = unset or null): grouping "batch" -> batch
// statistics, any other grouping -> group statistics; identity -> (none, none), mean -> (T, none),
// mean_std and asym_clip -> (T, T); unknown methods count as identity.
struct RewardNormalization {
  std::string grouping = "batch";
  std::string method = "identity";
  std::optional<NormType> norm_mean_type;
  std::optional<NormType> norm_std_type;
};
struct ResolvedNorm {
  NormType mean_type;
  NormType std_type;
};
// Types in {none, batch, group}; running is an error naming the key.
ResolvedNorm resolve_reward_normalization(const RewardNormalization& cfg);

// Normalises x [B] within the groups of `grouping` ("batch" = one group). mean: batch/group/none;
// std branch: (x − μ)/(σ + 1e-6) where the group has > 1 sample and |σ| > 1e-6, else 0 (σ is the
// batch or group unbiased std); no std: x − μ.
at::Tensor agentic_reward_norm(const at::Tensor& x, const Columns& columns, std::string_view grouping,
                               NormType mean_type, NormType std_type);

// Discounted step returns per trajectory: samples of one traj_id ordered by step,
// r_t = Σ_{k>=t} γ^{k−t}·score_k. Returns [B] in the input order.
at::Tensor discounted_step_returns(const std::vector<std::string>& traj_ids, const std::vector<int64_t>& steps,
                                   const at::Tensor& step_scores, double gamma);

// GiGPO state groups: samples with the same observation hash inside one traj_group_id. rollcpp keys
// them by "<traj_group_id>|<state_hash>" (ROLL keys by the hash alone, so equal states of different
// traj groups would share a group). Metrics system/state_batch_size/{max,mean,min}.
struct StateGroups {
  std::vector<std::string> state_group_id;
  MetricMap metrics;
};
StateGroups build_state_groups(const std::vector<std::string>& traj_group_ids,
                               const std::vector<std::string>& state_hashes);

struct AgenticRewardParams {
  AdvEstimator adv_estimator = AdvEstimator::reinforce;
  RewardNormalization reward_normalization;
  double episode_reward_weight = 1.0;  // gigpo
  double step_reward_weight = 1.0;     // gigpo
  std::optional<double> reward_clip;
};
struct AgenticRewardInputs {
  at::Tensor scores;          // [B, T] token scores (or [B]); summed per sample for the default estimators
  at::Tensor episode_scores;  // [B], gigpo
  at::Tensor step_rewards;    // [B] discounted step returns, gigpo and step_reinforce
  Columns columns;            // grouping column; gigpo also traj_group_id and state_hash
};
struct AgenticRewardResult {
  at::Tensor response_level_rewards;  // [B]
  at::Tensor episode_rewards_norm;    // gigpo only
  at::Tensor step_rewards_norm;       // gigpo only
  std::vector<std::string> state_group_id;  // gigpo only
  MetricMap metrics;
};
// gigpo: r = w_e·norm(episode_scores, config) + w_s·norm(step_rewards, grouping state_group_id, types from
// the config's method); step_reinforce: norm(step_rewards); others: norm(Σ_t scores). Then ±reward_clip
// with critic/reward_clip_frac.
AgenticRewardResult compute_response_level_rewards(const AgenticRewardInputs& in, const AgenticRewardParams& params);

}  // namespace roll::rl
