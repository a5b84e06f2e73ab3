#include "roll/rl/agentic_reward.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "roll/core/error.h"
#include "roll/rl/check.h"
#include "roll/rl/masked.h"

namespace roll::rl {

ResolvedNorm resolve_reward_normalization(const RewardNormalization& cfg) {
  NormType scope = cfg.grouping == "batch" ? NormType::batch : NormType::group;
  NormType dm = NormType::none, ds = NormType::none;
  if (cfg.method == "mean") {
    dm = scope;
  } else if (cfg.method == "mean_std" || cfg.method == "asym_clip") {
    dm = ds = scope;
  }
  ResolvedNorm r{cfg.norm_mean_type.value_or(dm), cfg.norm_std_type.value_or(ds)};
  if (r.mean_type == NormType::running)
    throw Error("reward_normalization.norm_mean_type: 'running' is RLVR-only; use batch, group or null");
  if (r.std_type == NormType::running)
    throw Error("reward_normalization.norm_std_type: 'running' is RLVR-only; use batch, group or null");
  return r;
}

at::Tensor agentic_reward_norm(const at::Tensor& scores, const Columns& columns, std::string_view grouping,
                               NormType mean_type, NormType std_type) {
  detail::check_dims(scores, "scores", {-1});
  detail::check_finite(scores, "scores");
  const int64_t B = scores.size(0);
  at::Tensor x = scores.to(at::kFloat);
  Groups g;
  if (grouping == "batch") {
    g = group_by(std::vector<std::string>(B, "default"));
  } else {
    g = group_by(column(columns, grouping, B));
  }
  at::Tensor mean;
  switch (mean_type) {
    case NormType::batch: mean = x.mean().expand({B}); break;
    case NormType::group: mean = group_mean(x, g); break;
    case NormType::none: mean = at::zeros_like(x); break;
    case NormType::running: throw Error("agentic reward normalisation has no 'running' type");
  }
  if (std_type == NormType::none) return (x - mean).to(scores.scalar_type());
  at::Tensor std;
  switch (std_type) {
    case NormType::batch: std = (B > 1 ? x.std() : at::zeros({}, x.options())).expand({B}); break;
    case NormType::group: std = group_std(x, g); break;
    default: throw Error("agentic reward normalisation has no 'running' type");
  }
  // A group of one sample, or one whose rewards are all equal, carries no signal: 0 (ROLL's guard).
  at::Tensor ok = at::logical_and(group_size(x, g) > 1, std.abs() > 1e-6);
  at::Tensor out = at::where(ok, (x - mean) / (std + 1e-6), at::zeros_like(x));
  return out.to(scores.scalar_type());
}

at::Tensor discounted_step_returns(const std::vector<std::string>& traj_ids, const std::vector<int64_t>& steps,
                                   const at::Tensor& step_scores, double gamma) {
  detail::check_dims(step_scores, "step_scores", {-1});
  const int64_t B = step_scores.size(0);
  if (static_cast<int64_t>(traj_ids.size()) != B || static_cast<int64_t>(steps.size()) != B)
    throw Error(fmt::format("discounted_step_returns: traj_id has {} entries, step {}, step_scores {}",
                            traj_ids.size(), steps.size(), B));
  at::Tensor s = step_scores.detach().to(at::kDouble).contiguous();
  const double* score = s.data_ptr<double>();
  std::vector<double> out(B, 0.0);
  Groups g = group_by(traj_ids);
  // Trajectories are short lists of steps: a scalar reverse scan per trajectory.
  for (auto members : g.members) {
    std::stable_sort(members.begin(), members.end(), [&](int64_t a, int64_t b) { return steps[a] < steps[b]; });
    double run = 0.0;
    for (auto it = members.rbegin(); it != members.rend(); ++it) {
      run = score[*it] + gamma * run;
      out[*it] = run;
    }
  }
  return at::tensor(at::ArrayRef<double>(out), at::TensorOptions().dtype(at::kDouble)).to(at::kFloat);
}

StateGroups build_state_groups(const std::vector<std::string>& traj_group_ids,
                               const std::vector<std::string>& state_hashes) {
  if (traj_group_ids.size() != state_hashes.size())
    throw Error(fmt::format("build_state_groups: traj_group_id has {} entries but state_hash has {}",
                            traj_group_ids.size(), state_hashes.size()));
  StateGroups out;
  out.state_group_id.reserve(traj_group_ids.size());
  for (size_t i = 0; i < traj_group_ids.size(); ++i)
    out.state_group_id.push_back(traj_group_ids[i] + "|" + state_hashes[i]);
  Groups g = group_by(out.state_group_id);
  std::vector<double> sizes;
  for (const auto& m : g.members) sizes.push_back(static_cast<double>(m.size()));
  if (!sizes.empty()) {
    out.metrics.add("system/state_batch_size/max", *std::max_element(sizes.begin(), sizes.end()));
    out.metrics.add("system/state_batch_size/mean",
                    std::accumulate(sizes.begin(), sizes.end(), 0.0) / static_cast<double>(sizes.size()));
    out.metrics.add("system/state_batch_size/min", *std::min_element(sizes.begin(), sizes.end()));
  }
  return out;
}

AgenticRewardResult compute_response_level_rewards(const AgenticRewardInputs& in, const AgenticRewardParams& p) {
  AgenticRewardResult out;
  ResolvedNorm norm = resolve_reward_normalization(p.reward_normalization);
  const std::string& grouping = p.reward_normalization.grouping;
  if (p.adv_estimator == AdvEstimator::gigpo) {
    detail::check_dims(in.episode_scores, "episode_scores", {-1});
    const int64_t B = in.episode_scores.size(0);
    detail::check_dims(in.step_rewards, "step_rewards", {B});
    out.episode_rewards_norm = agentic_reward_norm(in.episode_scores, in.columns, grouping, norm.mean_type,
                                                   norm.std_type);
    StateGroups sg = build_state_groups(column(in.columns, "traj_group_id", B), column(in.columns, "state_hash", B));
    out.metrics.merge(sg.metrics);
    // The step term uses the state groups and only the config's method (ROLL builds a fresh config).
    RewardNormalization step_cfg{"state_group_id", p.reward_normalization.method, std::nullopt, std::nullopt};
    ResolvedNorm step_norm = resolve_reward_normalization(step_cfg);
    Columns cols{{"state_group_id", sg.state_group_id}};
    out.step_rewards_norm = agentic_reward_norm(in.step_rewards, cols, "state_group_id", step_norm.mean_type,
                                                step_norm.std_type);
    out.state_group_id = std::move(sg.state_group_id);
    out.response_level_rewards =
        p.episode_reward_weight * out.episode_rewards_norm + p.step_reward_weight * out.step_rewards_norm;
  } else if (p.adv_estimator == AdvEstimator::step_reinforce) {
    detail::check_dims(in.step_rewards, "step_rewards", {-1});
    out.response_level_rewards =
        agentic_reward_norm(in.step_rewards, in.columns, grouping, norm.mean_type, norm.std_type);
  } else {
    if (!in.scores.defined()) throw Error("rl: tensor 'scores' is missing");
    at::Tensor total = in.scores.dim() == 2 ? in.scores.sum(-1) : in.scores;
    detail::check_dims(total, "scores", {-1});
    out.response_level_rewards = agentic_reward_norm(total, in.columns, grouping, norm.mean_type, norm.std_type);
  }
  if (p.reward_clip) {
    double c = *p.reward_clip;
    out.metrics.add("critic/reward_clip_frac", clip_fraction(out.response_level_rewards, -c, c));
    out.response_level_rewards = at::clamp(out.response_level_rewards, -c, c);
  }
  return out;
}

}  // namespace roll::rl
