#pragma once
// Response-level reward post-processing and token-level rewards for RLVR (docs/rl.md).
#include <ATen/core/Tensor.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "roll/rl/estimator.h"
#include "roll/rl/kl.h"
#include "roll/rl/metrics.h"

namespace roll::rl {

// Running mean/std of a reward stream: a Welford-style merge of each batch's (biased) moments, count
// starting at 1e-24, std = sqrt(var·N/(N−1)) (ROLL's RunningMoments).
class RunningMoments {
 public:
  // Merges `xs` (any shape); returns the batch's mean and unbiased std (0 for one element).
  std::pair<double, double> update(const at::Tensor& xs);
  double mean() const { return mean_; }
  double std() const { return std_; }
  double var() const { return var_; }
  double count() const { return count_; }

 private:
  double mean_ = 0.0, std_ = 1.0, var_ = 1.0, count_ = 1e-24;
};
// One RunningMoments per reward domain. ROLL keys its map by domain but reads the literal key "domain"
// (KeyError); rollcpp looks up the domain it is given.
using RunningMomentsMap = std::map<std::string, RunningMoments, std::less<>>;

// r' = (r − mean)/(std + 1e-6), or r − mean without a std type. mean/std come from the whole batch, from
// each group of n = num_return_sequences consecutive samples, or from `running` (updated with r first).
// A group or batch of one sample has std 0 (ROLL divides 0 by NaN there). `running` is required for
// NormType::running.
at::Tensor reward_norm(const at::Tensor& rewards, int64_t num_return_sequences, NormType mean_type,
                       NormType std_type, RunningMoments* running = nullptr);

// r'_i = r_i − mean_{j≠i} r_j within each group of n consecutive samples (n >= 2): RLOO's baseline.
at::Tensor leave_one_out_baseline(const at::Tensor& rewards, int64_t num_return_sequences);

struct RewardPostprocessParams {
  AdvEstimator adv_estimator = AdvEstimator::gae;
  NormType norm_mean_type = NormType::none;
  NormType norm_std_type = NormType::none;
  int64_t num_return_sequences = 1;
  std::optional<double> reward_clip;
};
struct RewardPostprocessResult {
  at::Tensor rewards;   // [B]
  NormType mean_type;   // the types actually used (grpo forces group/group)
  NormType std_type;
  MetricMap metrics;    // critic/reward_clip_frac (0 when reward_clip is unset)
};
// ROLL's reward_postprocess for one domain: grpo uses group/group normalisation (without touching the
// caller's config), rloo subtracts the leave-one-out mean (then divides by the std type's std if one is
// set), others use the given types; then clips to ±reward_clip. NaN/inf rewards are an error.
RewardPostprocessResult reward_postprocess(const at::Tensor& response_level_rewards,
                                           const RewardPostprocessParams& params,
                                           RunningMoments* running = nullptr);
// Same, with the RunningMoments of `domain` taken from (or created in) `running`.
RewardPostprocessResult reward_postprocess(const at::Tensor& response_level_rewards,
                                           const RewardPostprocessParams& params, RunningMomentsMap& running,
                                           std::string_view domain);

// [B] rewards placed on the last real token: e_b = argmax_t(position_ids·attention_mask) (channel 0 of
// 3-D mRoPE position ids) in full-sequence coordinates, then the [B, S−1] response grid (column e_b − 1).
at::Tensor expand_to_token_level(const at::Tensor& response_level_rewards, const at::Tensor& attention_mask,
                                 const at::Tensor& position_ids);

struct TokenRewardInputs {
  at::Tensor response_level_rewards;  // [B]
  at::Tensor attention_mask;          // [B, S]
  at::Tensor position_ids;            // [B, S] or [B, C, S]
  at::Tensor response_mask;           // [B, S−1]  (response_mask[:, 1:])
  at::Tensor old_log_probs;           // [B, S−1]
  at::Tensor ref_log_probs;           // [B, S−1]; undefined when there is no reference (β = 0, KL = 0)
};
struct TokenRewardParams {
  KlType kl_penalty = KlType::kl;
  bool add_token_level_kl = false;
  std::optional<double> reward_clip;
};
struct TokenRewardResult {
  at::Tensor token_level_rewards;  // [B, S−1]
  at::Tensor kl;                   // [B, S−1] KL(old ‖ ref) × mask
  MetricMap metrics;               // critic/kl, critic/kl_coef, critic/token_reward_clip_frac
};
// ROLL's compute_token_reward: token rewards, minus β·KL when add_token_level_kl, KL controller update
// with current_kl = mean_b(masked_mean_t(KL)) and n_steps = B, then the token clip.
TokenRewardResult compute_token_reward(const TokenRewardInputs& in, const TokenRewardParams& params,
                                       KlController& kl_ctrl);

}  // namespace roll::rl
