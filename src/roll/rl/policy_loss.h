#pragma once
// Actor policy losses (docs/rl.md): PPO clip (symmetric / asymmetric, dual clip) over token,
// sequence (GSPO) or segment ratios; the off-policy pg_variants; k3 KL loss, entropy bonus, sample
// weights, rl_loss_coef; with ROLL's actor/* metrics.
#include <ATen/core/Tensor.h>

#include <limits>
#include <string_view>

#include "roll/rl/agg_loss.h"
#include "roll/rl/metrics.h"

namespace roll::rl {

enum class PgVariant { ppo, vanilla, tis, topr, cispo, kimi15 };
PgVariant parse_pg_variant(std::string_view name);
std::string_view to_string(PgVariant v);

// How ρ is formed: token ρ_t = e^{ℓ−ℓ_old}; seq (GSPO, `importance_sampling: seq`) ρ_b =
// e^{masked_mean_t(ℓ−ℓ_old, fm)} on every token; segment (agentic `ratio_type: segment`) ρ_t =
// e^{segment_mean(ℓ−ℓ_old)} over the turn containing t.
enum class RatioType { token, seq, segment };
RatioType parse_importance_sampling(std::string_view name);  // "token" | "seq"
RatioType parse_ratio_type(std::string_view name);           // "token" | "segment"
std::string_view to_string(RatioType r);

// Every knob starts at the value that switches its effect off (no clip, no KL, entropy or
// proximal term, no truncation), so a caller states what it wants. ROLL's defaults live once, in the
// config (config/ppo_config.h, rlvr_config.h, worker_config.h); workers::policy_loss_params copies
// them in.
inline constexpr double kNoClip = std::numeric_limits<double>::infinity();

struct PolicyLossParams {
  PgVariant pg_variant = PgVariant::ppo;
  RatioType ratio_type = RatioType::token;  // applies to every pg_variant
  double pg_clip = kNoClip;
  bool use_pg_clip_range = false;
  double pg_clip_low = kNoClip;
  double pg_clip_high = kNoClip;
  bool dual_clip_loss = false;  // where A < 0: L = −max(min(ρA, clip(ρ)A), (1 + 2·pg_clip)·A)
  LossAggMode loss_agg_mode = LossAggMode::seq_mean_token_mean;
  bool use_kl_loss = false;
  double kl_loss_coef = 0.0;
  double entropy_loss_coef = 0.0;
  double rl_loss_coef = 1.0;
  // pg_variant knobs. ROLL reads them from actor_train but they are not WorkerConfig fields, so YAML
  // values are dropped and its defaults always apply there; rollcpp honours the configured values.
  double tis_lower_bound = 0.0;
  double tis_upper_bound = kNoClip;
  double topr_positive_weight = 1.0;
  double topr_negative_weight = 1.0;
  double cispo_epsilon_low = kNoClip;
  double cispo_epsilon_high = kNoClip;
  bool cispo_use_unified_mask = false;
  double kimi15_tau = 0.0;
};

struct PolicyLossInputs {
  at::Tensor log_probs;            // ℓ [B, T], current policy (carries the gradient)
  at::Tensor old_log_probs;        // ℓ_old [B, T]; undefined -> ℓ detached (ratio 1, first epoch without recompute)
  at::Tensor ref_log_probs;        // ℓ_ref [B, T]; needed for use_kl_loss (otherwise only the kl_loss metric)
  at::Tensor advantages;           // A [B, T]
  at::Tensor response_mask;        // m [B, T]
  at::Tensor final_response_mask;  // fm [B, T] (m × sample mask × filters); undefined -> m
  at::Tensor entropy;              // H [B, T]; needed when entropy_loss_coef > 0
  at::Tensor is_weight;            // train-infer IS weight [B, T] (docs/rl.md), multiplies the token loss
  at::Tensor sample_weights;       // [B] (compute_sample_weights); undefined -> ones
  at::Tensor scores;               // [B], topr splits samples by score > 0
  AggNorm norm_final;              // global normalisers of fm
  AggNorm norm_response;           // global normalisers of m
};

struct PolicyLossResult {
  at::Tensor total_loss;        // scalar to backpropagate
  at::Tensor pg_loss;           // agg(L, fm) without sample weights
  at::Tensor weighted_pg_loss;  // agg(L, fm) with sample weights
  at::Tensor kl_loss;           // agg(k3(ℓ, ℓ_ref)·fm, fm)
  at::Tensor entropy_loss;      // agg(H, m) (undefined unless entropy_loss_coef > 0)
  MetricMap metrics;            // actor/*@sum, @max, @min, @mean as ROLL names them
};

// total = (weighted_pg + kl_loss_coef·kl_loss if use_kl_loss) · rl_loss_coef − entropy_loss_coef·entropy.
// The token loss is multiplied by fm before aggregation, so filtered tokens never count even in
// token-mean (which in ROLL relies on the loss being pre-masked).
PolicyLossResult policy_loss(const PolicyLossInputs& in, const PolicyLossParams& params);

// ρ per RatioType (see above); `mask` is fm.
at::Tensor policy_ratio(const at::Tensor& log_probs, const at::Tensor& old_log_probs, const at::Tensor& mask,
                        RatioType type);

struct PpoClip {
  at::Tensor loss;   // −min(ρA, clip(ρ, 1−ε_lo, 1+ε_hi)A), dual-clipped where asked
  at::Tensor surr1;  // ρA
  at::Tensor surr2;  // clip(ρ)A
};
PpoClip ppo_clip_loss(const at::Tensor& ratio, const at::Tensor& advantages, double eps_low, double eps_high,
                      bool dual_clip, double pg_clip);

// Sample weights (RLVR): ones × (0.5 + 1.5·clamp(difficulty, 0, 1)) if difficulty_loss_weight (and
// `difficulty` given) × (1.5 − (len − min)/(max − min + 1e-8)) if length_loss_weight, len = Σ_t m;
// then rescaled so they sum to B.
at::Tensor compute_sample_weights(const at::Tensor& response_mask, const at::Tensor& difficulty,
                                  bool difficulty_loss_weight, bool length_loss_weight);

}  // namespace roll::rl
