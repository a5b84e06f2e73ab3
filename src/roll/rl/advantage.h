#pragma once
// Advantage estimators (docs/rl.md): ROLL's compute_advantage and its agentic twin in one function.
#include <ATen/core/Tensor.h>

#include <optional>
#include <utility>

#include "roll/rl/estimator.h"
#include "roll/rl/metrics.h"

namespace roll::rl {

// gamma and lambd start at 1 (undiscounted returns, GAE without smoothing); ROLL's defaults live in
// config/ppo_config.h and the pipeline's step maths copies them in.
struct AdvantageParams {
  AdvEstimator estimator = AdvEstimator::gae;
  double gamma = 1.0;
  double lambd = 1.0;
  bool whiten_rewards = false;
  bool whiten_advantages = false;
  std::optional<double> advantage_clip;
};

struct AdvantageInputs {
  at::Tensor token_level_rewards;  // R [B, T]
  at::Tensor mask;                 // M [B, T]: final_response_mask (RLVR) or response_mask[:, 1:] (agentic)
  at::Tensor values;               // [B, T], gae only
  // On-policy distillation: Σ_teachers coef·KL(ℓ, ℓ_teacher) [B, T]. Mixed OPD subtracts it from the
  // advantages; pure OPD uses −opd_penalty as advantages and returns (rewards ignored).
  at::Tensor opd_penalty;
  bool pure_opd = false;
};

struct AdvantageResult {
  at::Tensor advantages;           // [B, T], × M, whitened/clipped as asked
  at::Tensor returns;              // [B, T]
  at::Tensor raw_advantages;       // before OPD, whitening and clipping
  at::Tensor token_level_rewards;  // R after whitening, × M
  at::Tensor values;               // V × M (gae), else undefined
  bool whitening_skipped = false;  // Σ M <= 1: whitening would divide by zero and is skipped
  MetricMap metrics;               // critic/advantage_clip_frac when advantage_clip is set
};

// 0. Σ M <= 1 disables whitening. 1. R = whiten(R) if asked; R ·= M. 2. estimator: gae (V ·= M);
// reinforce/grpo/gigpo/step_reinforce/rloo: discounted return; agentic_reinforce: per-turn return.
// 3. raw = A; A −= opd_penalty. 4. A = whiten(A) if asked; A ·= M. 5. clip to ±advantage_clip.
AdvantageResult compute_advantage(const AdvantageInputs& in, const AdvantageParams& params);

// δ_t = R_t + γV_{t+1} − V_t (V_T = 0), A_t = δ_t + γλA_{t+1}; returns {A, A + V}.
std::pair<at::Tensor, at::Tensor> gae_advantage_return(const at::Tensor& rewards, const at::Tensor& values,
                                                       double gamma, double lambd);
// G_t = R_t + γG_{t+1}.
at::Tensor discounted_return(const at::Tensor& rewards, double gamma);
// agentic_reinforce: each maximal run of 1s in `mask` is a turn; walking turns from last to first,
// C = R[end−1] + γC and every position of the turn gets C; 0 outside the mask.
at::Tensor segment_discounted_return(const at::Tensor& rewards, const at::Tensor& mask, double gamma);

}  // namespace roll::rl
