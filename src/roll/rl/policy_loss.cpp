#include "roll/rl/policy_loss.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "roll/core/error.h"
#include "roll/rl/check.h"
#include "roll/rl/kl.h"
#include "roll/rl/masked.h"

namespace roll::rl {
namespace {

constexpr std::pair<std::string_view, PgVariant> kVariants[] = {
    {"ppo", PgVariant::ppo},     {"vanilla", PgVariant::vanilla}, {"tis", PgVariant::tis},
    {"topr", PgVariant::topr},   {"cispo", PgVariant::cispo},     {"kimi15", PgVariant::kimi15},
};

double item(const at::Tensor& t) { return t.detach().item<double>(); }

// Token-mean with an explicit token count, as ROLL's clip-fraction metrics use it.
double token_mean(const at::Tensor& x, const at::Tensor& mask, const std::optional<double>& num_tokens) {
  return item(agg_loss(x, mask, LossAggMode::token_mean, AggNorm{num_tokens, std::nullopt}));
}

}  // namespace

PgVariant parse_pg_variant(std::string_view name) {
  for (const auto& [n, v] : kVariants)
    if (n == name) return v;
  throw Error(fmt::format("pg_variant '{}' is not known; use vanilla, ppo, tis, topr, cispo or kimi15", name));
}

std::string_view to_string(PgVariant v) {
  for (const auto& [n, x] : kVariants)
    if (x == v) return n;
  return "?";
}

RatioType parse_importance_sampling(std::string_view name) {
  if (name == "token") return RatioType::token;
  if (name == "seq") return RatioType::seq;
  throw Error(fmt::format("importance_sampling '{}' is not known; use token or seq", name));
}

RatioType parse_ratio_type(std::string_view name) {
  if (name == "token") return RatioType::token;
  if (name == "segment") return RatioType::segment;
  throw Error(fmt::format("ratio_type '{}' is not known; use token or segment", name));
}

std::string_view to_string(RatioType r) {
  switch (r) {
    case RatioType::token: return "token";
    case RatioType::seq: return "seq";
    case RatioType::segment: return "segment";
  }
  return "?";
}

at::Tensor policy_ratio(const at::Tensor& log_probs, const at::Tensor& old_log_probs, const at::Tensor& mask,
                        RatioType type) {
  at::Tensor d = log_probs - old_log_probs;
  switch (type) {
    case RatioType::token: return d.exp();
    case RatioType::seq: return masked_mean_rows(d, mask).exp().unsqueeze(-1).expand_as(d);
    case RatioType::segment: return segment_masked_mean(d, mask).exp();
  }
  return d.exp();
}

PpoClip ppo_clip_loss(const at::Tensor& ratio, const at::Tensor& advantages, double eps_low, double eps_high,
                      bool dual_clip, double pg_clip) {
  PpoClip out;
  out.surr1 = ratio * advantages;
  out.surr2 = ratio.clamp(1.0 - eps_low, 1.0 + eps_high) * advantages;
  out.loss = -at::min(out.surr1, out.surr2);
  if (dual_clip) {
    // Bounds how far a negative-advantage token with a huge ratio can push: −max(−L, (1 + 2ε)A).
    at::Tensor dual = -at::max(-out.loss, (1.0 + 2.0 * pg_clip) * advantages);
    out.loss = at::where(advantages < 0, dual, out.loss);
  }
  return out;
}

at::Tensor compute_sample_weights(const at::Tensor& response_mask, const at::Tensor& difficulty,
                                  bool difficulty_loss_weight, bool length_loss_weight) {
  detail::check_dims(response_mask, "response_mask", {-1, -1});
  const int64_t B = response_mask.size(0);
  at::Tensor w = at::ones({B}, at::kFloat);
  if (difficulty_loss_weight && difficulty.defined()) {
    detail::check_dims(difficulty, "difficulty", {B});
    w = w * (0.5 + 1.5 * at::clamp(difficulty.to(at::kFloat), 0.0, 1.0));
  }
  if (length_loss_weight) {
    at::Tensor len = response_mask.to(at::kFloat).sum(1);
    at::Tensor norm_len = (len - len.min()) / (len.max() - len.min() + 1e-8);
    w = w * (1.5 - norm_len);
  }
  double total = w.sum().item<double>();
  if (total > 0) w = w * (static_cast<double>(B) / (total + 1e-8));
  return w;
}

PolicyLossResult policy_loss(const PolicyLossInputs& in, const PolicyLossParams& p) {
  detail::check_dims(in.log_probs, "log_probs", {-1, -1});
  const int64_t B = in.log_probs.size(0);
  detail::check_same_shape(in.advantages, "advantages", in.log_probs, "log_probs");
  detail::check_same_shape(in.response_mask, "response_mask", in.log_probs, "log_probs");
  const at::Tensor& lp = in.log_probs;
  at::Tensor old = in.old_log_probs.defined() ? in.old_log_probs.detach() : lp.detach();
  detail::check_same_shape(old, "old_log_probs", lp, "log_probs");
  at::Tensor m = detail::as_mask(in.response_mask, lp);
  at::Tensor fm = in.final_response_mask.defined() ? detail::as_mask(in.final_response_mask, lp) : m;
  detail::check_same_shape(fm, "final_response_mask", lp, "log_probs");
  at::Tensor A = in.advantages.detach().to(lp.scalar_type());
  at::Tensor sw = in.sample_weights.defined() ? in.sample_weights.to(lp.scalar_type()) : at::ones({B}, lp.options());
  detail::check_dims(sw, "sample_weights", {B});
  const LossAggMode mode = p.loss_agg_mode;
  PolicyLossResult out;
  MetricMap& mt = out.metrics;

  const double eps_lo = p.use_pg_clip_range ? p.pg_clip_low : p.pg_clip;
  const double eps_hi = p.use_pg_clip_range ? p.pg_clip_high : p.pg_clip;
  // Every variant uses the configured ratio: ROLL's agentic worker forms the segment ratio before the
  // variant dispatch.
  at::Tensor ratio = policy_ratio(lp, old, fm, p.ratio_type);

  at::Tensor loss;
  switch (p.pg_variant) {
    case PgVariant::ppo: {
      PpoClip c = ppo_clip_loss(ratio, A, eps_lo, eps_hi, p.dual_clip_loss, p.pg_clip);
      loss = c.loss;
      at::Tensor r = ratio.detach();
      at::Tensor lo = (r < 1.0 - eps_lo).to(lp.scalar_type());
      at::Tensor hi = (r > 1.0 + eps_hi).to(lp.scalar_type());
      mt.add("actor/ppo_ratio_high_clipfrac@sum", token_mean(hi, fm, in.norm_final.num_tokens));
      mt.add("actor/ppo_ratio_low_clipfrac@sum", token_mean(lo, fm, in.norm_final.num_tokens));
      mt.add("actor/ppo_ratio_clipfrac@sum", token_mean(lo + hi, fm, in.norm_final.num_tokens));
      at::Tensor clipped = at::lt(c.surr2.detach(), c.surr1.detach()).to(lp.scalar_type());
      mt.add("actor/clipfrac@sum",
             item(agg_loss(clipped, m, mode, AggNorm{in.norm_final.num_tokens, in.norm_response.num_valid_samples})));
      break;
    }
    case PgVariant::vanilla:
      loss = -lp * A;
      break;
    case PgVariant::tis: {
      at::Tensor clipped_ratio = at::clamp(ratio, p.tis_lower_bound, p.tis_upper_bound).detach();
      loss = -clipped_ratio * A * lp;
      at::Tensor r = ratio.detach();
      at::Tensor lo = (r < p.tis_lower_bound).to(lp.scalar_type());
      at::Tensor hi = (r > p.tis_upper_bound).to(lp.scalar_type());
      mt.add("actor/tis_lower_clipfrac@sum", token_mean(lo, m, in.norm_response.num_tokens));
      mt.add("actor/tis_upper_clipfrac@sum", token_mean(hi, m, in.norm_response.num_tokens));
      mt.add("actor/tis_total_clipfrac@sum", token_mean(lo + hi, m, in.norm_response.num_tokens));
      mt.add("actor/tis_clipped_ratio_mean", item(masked_mean_rows(clipped_ratio, m).mean()));
      mt.add("actor/tis_lower_bound", p.tis_lower_bound);
      mt.add("actor/tis_upper_bound", p.tis_upper_bound);
      break;
    }
    case PgVariant::topr: {
      if (!in.scores.defined()) throw Error("pg_variant topr needs the per-sample 'scores' tensor");
      detail::check_dims(in.scores, "scores", {B});
      at::Tensor pos = (in.scores > 0).to(lp.scalar_type()).unsqueeze(-1);
      at::Tensor neg = 1.0 - pos;
      at::Tensor clipped_ratio = at::clamp(ratio, 0.0, 1.0).detach();
      at::Tensor pos_loss = -A * lp * pos;  // positive samples: plain (SFT-like) update
      at::Tensor neg_loss = -clipped_ratio * A * lp * neg;  // negative samples: truncated IS
      loss = p.topr_positive_weight * pos_loss + p.topr_negative_weight * neg_loss;
      at::Tensor r = ratio.detach();
      at::Tensor neg_b = neg.expand_as(r) > 0;
      at::Tensor nlo = at::logical_and(r < 0.0, neg_b).to(at::kFloat);
      at::Tensor nhi = at::logical_and(r > 1.0, neg_b).to(at::kFloat);
      at::Tensor s = in.scores.detach().to(at::kFloat);
      mt.add("actor/topr_positive_samples", item(pos.sum()));
      mt.add("actor/topr_negative_samples", item(neg.sum()));
      mt.add("actor/topr_positive_ratio", item(pos.sum()) / (static_cast<double>(B) + 1e-8));
      mt.add("actor/topr_negative_ratio", item(neg.sum()) / (static_cast<double>(B) + 1e-8));
      mt.add("actor/topr_negative_lower_clipfrac", item(nlo.mean()));
      mt.add("actor/topr_negative_upper_clipfrac", item(nhi.mean()));
      mt.add("actor/topr_negative_total_clipfrac", item((nlo + nhi).mean()));
      mt.add("actor/topr_scores_mean", item(s.mean()));
      mt.add("actor/topr_scores_std", B > 1 ? item(s.std()) : 0.0);
      mt.add("actor/topr_positive_weight", p.topr_positive_weight);
      mt.add("actor/topr_negative_weight", p.topr_negative_weight);
      mt.add("actor/topr_positive_loss", item(agg_loss(pos_loss * m, m, mode, in.norm_response)));
      mt.add("actor/topr_negative_loss", item(agg_loss(neg_loss * m, m, mode, in.norm_response)));
      break;
    }
    case PgVariant::cispo: {
      const double lower = 1.0 - p.cispo_epsilon_low, upper = 1.0 + p.cispo_epsilon_high;
      at::Tensor clipped_ratio = at::clamp(ratio, lower, upper).detach();
      loss = -clipped_ratio * A * lp;
      at::Tensor r = ratio.detach();
      at::Tensor lo = (r < lower).to(at::kFloat), hi = (r > upper).to(at::kFloat);
      if (p.cispo_use_unified_mask) {
        // Paper eq. 7: drop tokens the PPO clip would stop (A > 0 above, A < 0 below the range).
        at::Tensor drop_pos = at::logical_and(A > 0, r > upper);
        at::Tensor drop_neg = at::logical_and(A < 0, r < lower);
        at::Tensor keep = at::logical_not(at::logical_or(drop_pos, drop_neg));
        loss = loss * keep.to(lp.scalar_type());
        mt.add("actor/cispo_masked_positive_tokens", item(drop_pos.to(at::kFloat).mean()));
        mt.add("actor/cispo_masked_negative_tokens", item(drop_neg.to(at::kFloat).mean()));
        mt.add("actor/cispo_kept_tokens", item(keep.to(at::kFloat).mean()));
      }
      mt.add("actor/cispo_epsilon_low", p.cispo_epsilon_low);
      mt.add("actor/cispo_epsilon_high", p.cispo_epsilon_high);
      mt.add("actor/cispo_clip_lower", lower);
      mt.add("actor/cispo_clip_upper", upper);
      mt.add("actor/cispo_use_unified_mask", p.cispo_use_unified_mask ? 1.0 : 0.0);
      mt.add("actor/cispo_lower_clipfrac", item(lo.mean()));
      mt.add("actor/cispo_upper_clipfrac", item(hi.mean()));
      mt.add("actor/cispo_total_clipfrac", item((lo + hi).mean()));
      mt.add("actor/cispo_clipped_ratio_mean", item(masked_mean_rows(clipped_ratio, m).mean()));
      break;
    }
    case PgVariant::kimi15: {
      loss = -A * lp + p.kimi15_tau * 0.5 * (lp - old).pow(2);
      at::Tensor log_ratio = at::log(ratio.detach() + 1e-8);
      double pg_mag = item((A * log_ratio).abs().mean());
      double reg_mag = item((p.kimi15_tau * log_ratio.pow(2) * 0.5).mean());
      mt.add("actor/kimi15_tau", p.kimi15_tau);
      mt.add("actor/kimi15_log_ratio_mean", item(log_ratio.mean()));
      mt.add("actor/kimi15_log_ratio_std", log_ratio.numel() > 1 ? item(log_ratio.std()) : 0.0);
      mt.add("actor/kimi15_log_ratio_abs_mean", item(log_ratio.abs().mean()));
      mt.add("actor/kimi15_policy_grad_magnitude", pg_mag);
      mt.add("actor/kimi15_kl_reg_magnitude", reg_mag);
      mt.add("actor/kimi15_reg_ratio", reg_mag / (pg_mag + 1e-8));
      break;
    }
  }

  if (in.is_weight.defined()) {
    detail::check_same_shape(in.is_weight, "train_infer_is_weight", lp, "log_probs");
    loss = loss * in.is_weight.to(lp.scalar_type());
  }
  loss = loss * fm;
  out.weighted_pg_loss = agg_loss(loss, fm, mode, in.norm_final, sw);
  out.pg_loss = agg_loss(loss, fm, mode, in.norm_final);

  if (in.ref_log_probs.defined()) {
    detail::check_same_shape(in.ref_log_probs, "ref_log_probs", lp, "log_probs");
    at::Tensor k3 = compute_approx_kl(lp, in.ref_log_probs.detach(), fm, KlType::k3);
    out.kl_loss = agg_loss(k3, fm, mode, in.norm_final);
  } else {
    if (p.use_kl_loss) throw Error("use_kl_loss needs the reference model's 'ref_log_probs'");
    out.kl_loss = at::zeros({}, lp.options());
  }
  at::Tensor total = p.use_kl_loss ? out.weighted_pg_loss + out.kl_loss * p.kl_loss_coef : out.weighted_pg_loss;
  total = total * p.rl_loss_coef;
  if (p.entropy_loss_coef > 0) {
    if (!in.entropy.defined()) throw Error("entropy_loss_coef > 0 needs the per-token 'entropy' tensor");
    detail::check_same_shape(in.entropy, "entropy", lp, "log_probs");
    out.entropy_loss = agg_loss(in.entropy * m, m, mode, in.norm_response);
    total = total - out.entropy_loss * p.entropy_loss_coef;
    mt.add("actor/entropy_loss@sum", item(out.entropy_loss));
  }
  out.total_loss = total;

  at::Tensor r = ratio.detach();
  at::Tensor valid = (fm > 0).any(-1).to(at::kFloat);
  double g_resp = in.norm_response.num_valid_samples.value_or(static_cast<double>(B));
  at::Tensor approxkl = compute_approx_kl(lp.detach(), old, m, KlType::mse);
  at::Tensor policykl = compute_approx_kl(lp.detach(), old, m, KlType::kl);
  mt.add("actor/pg_loss@sum", item(out.pg_loss));
  mt.add("actor/weighted_pg_loss@sum", item(out.weighted_pg_loss));
  mt.add("actor/kl_loss@sum", item(out.kl_loss));
  mt.add("actor/total_loss@sum", item(out.total_loss));
  mt.add("actor/approxkl@sum", item(agg_loss(approxkl, m, mode, in.norm_response)));
  mt.add("actor/policykl@sum", item(agg_loss(policykl, m, mode, in.norm_response)));
  mt.add("actor/ratio_mean@sum", item(agg_loss(r, m, LossAggMode::seq_mean_token_mean,
                                               AggNorm{std::nullopt, in.norm_response.num_valid_samples})));
  mt.add("actor/ratio_max@max", item((r * m).max()));
  mt.add("actor/ratio_min@min", item((r * m + (1.0 - m) * 1e10).min()));
  mt.add("actor/valid_samples@sum", item(valid.sum()));
  mt.add("actor/total_samples@sum", static_cast<double>(B));
  mt.add("actor/valid_sample_ratio@sum", item(valid.sum()) / g_resp);
  mt.add("actor/sample_weights_mean@mean", item(sw.mean()));
  mt.add("actor/sample_weights_min@min", item(sw.min()));
  mt.add("actor/sample_weights_max@max", item(sw.max()));
  return out;
}

}  // namespace roll::rl
