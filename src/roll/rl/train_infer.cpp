#include "roll/rl/train_infer.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "roll/core/error.h"
#include "roll/rl/check.h"
#include "roll/rl/kl.h"
#include "roll/rl/masked.h"

namespace roll::rl {
namespace {

constexpr std::pair<std::string_view, MismatchGranularity> kGranularities[] = {
    {"token", MismatchGranularity::token},
    {"geometric", MismatchGranularity::geometric},
    {"sequence", MismatchGranularity::sequence},
    {"segment", MismatchGranularity::segment},
};

size_t idx(MismatchGranularity g) { return static_cast<size_t>(g); }

}  // namespace

MismatchGranularity parse_mismatch_granularity(std::string_view name) {
  for (const auto& [n, g] : kGranularities)
    if (n == name) return g;
  throw Error(fmt::format("train_infer_correction granularity '{}' is not known; use token, geometric, sequence "
                          "or segment",
                          name));
}

std::string_view to_string(MismatchGranularity g) { return kGranularities[idx(g)].first; }

MismatchStats mismatch_stats(const at::Tensor& old_lp, const at::Tensor& infer_lp, const at::Tensor& mask) {
  MismatchStats s;
  at::Tensor q = old_lp - infer_lp;
  at::Tensor d = old_lp.exp() - infer_lp.exp();
  s.ratio[idx(MismatchGranularity::token)] = q.exp();
  s.diff[idx(MismatchGranularity::token)] = d;
  s.ratio[idx(MismatchGranularity::geometric)] = masked_mean_rows(q, mask).exp().unsqueeze(-1).expand_as(q);
  s.diff[idx(MismatchGranularity::geometric)] = masked_mean_rows(d, mask).unsqueeze(-1).expand_as(d);
  s.ratio[idx(MismatchGranularity::sequence)] = masked_sum_rows(q, mask).exp().unsqueeze(-1).expand_as(q);
  s.diff[idx(MismatchGranularity::sequence)] = masked_sum_rows(d, mask).unsqueeze(-1).expand_as(d);
  s.ratio[idx(MismatchGranularity::segment)] = segment_masked_mean(q, mask).exp();
  s.diff[idx(MismatchGranularity::segment)] = segment_masked_mean(d, mask);
  return s;
}

TrainInferResult train_infer_correction(const at::Tensor& response_mask, const at::Tensor& old_log_probs,
                                        const at::Tensor& infer_log_probs, const TrainInferParams& p,
                                        const AggNorm& norm) {
  detail::check_dims(old_log_probs, "old_log_probs", {-1, -1});
  detail::check_same_shape(response_mask, "response_mask", old_log_probs, "old_log_probs");
  at::Tensor old = old_log_probs.detach().to(at::kFloat);
  at::Tensor inf = infer_log_probs.defined() && infer_log_probs.numel() > 0 ? infer_log_probs.detach().to(at::kFloat)
                                                                           : old;
  detail::check_same_shape(inf, "infer_logprobs", old, "old_log_probs");
  at::Tensor m = detail::as_mask(response_mask, old);
  AggNorm local = local_agg_norm(m);
  const double tokens = norm.num_tokens.value_or(std::max(*local.num_tokens, 1.0));
  const double samples = norm.num_valid_samples.value_or(std::max(*local.num_valid_samples, 1.0));
  const AggNorm seq_norm{std::nullopt, samples};
  const AggNorm tok_norm{tokens, std::nullopt};

  TrainInferResult out;
  MetricMap& mt = out.metrics;
  MismatchStats s = mismatch_stats(old, inf, m);
  for (const auto& [name, g] : kGranularities) {
    mt.add(fmt::format("actor/train_infer_ratio_{}_mean@sum", name),
           agg_loss(s.ratio[idx(g)] * m, m, LossAggMode::seq_mean_token_mean, seq_norm).item<double>());
    mt.add(fmt::format("actor/train_infer_diff_{}_mean@sum", name),
           agg_loss(s.diff[idx(g)] * m, m, LossAggMode::seq_mean_token_mean, seq_norm).item<double>());
  }
  at::Tensor kl = compute_approx_kl(old, inf, m, KlType::k3);
  mt.add("actor/train_infer_kl@sum", agg_loss(kl, m, LossAggMode::seq_mean_token_mean, seq_norm).item<double>());
  at::Tensor valid = m > 0;
  if (valid.any().item<bool>()) {
    at::Tensor rt = s.ratio[idx(MismatchGranularity::token)].masked_select(valid);
    mt.add("actor/train_infer_ratio_token_max@max", rt.max().item<double>());
    mt.add("actor/train_infer_ratio_token_min@min", rt.min().item<double>());
  }

  if (p.is_weight.enabled) {
    at::Tensor w = s.ratio[idx(p.is_weight.weight_type)];
    if (p.is_weight.upper_bound) {
      double ub = *p.is_weight.upper_bound;
      mt.add("actor/is_weight_clipfrac@sum",
             agg_loss((w > ub).to(at::kFloat) * m, m, LossAggMode::token_mean, tok_norm).item<double>());
      w = w.clamp(0.0, ub);
    }
    // The ratios are built from detached log-probs, so the weight never carries a gradient here;
    // `detach` is kept for config parity.
    out.is_weight = w.contiguous();
  } else {
    out.is_weight = at::ones_like(old);
  }

  at::Tensor filter = at::ones_like(old);
  for (const MismatchFilter& f : p.filters) {
    if (!f.enabled) continue;
    std::string_view g = to_string(f.agg_type);
    if (f.ratio_enabled) {
      const at::Tensor& r = s.ratio[idx(f.agg_type)];
      at::Tensor keep = at::logical_and(r >= f.ratio_low, r <= f.ratio_high).to(at::kFloat);
      mt.add(fmt::format("actor/train_infer_{}_ratio_mask_mean@sum", g),
             agg_loss(keep * m, m, LossAggMode::token_mean, tok_norm).item<double>());
      filter = filter * keep;
    }
    if (f.diff_enabled) {
      const at::Tensor& d = s.diff[idx(f.agg_type)];
      at::Tensor keep = at::logical_and(d >= f.diff_low, d <= f.diff_high).to(at::kFloat);
      mt.add(fmt::format("actor/train_infer_{}_diff_mask_mean@sum", g),
             agg_loss(keep * m, m, LossAggMode::token_mean, tok_norm).item<double>());
      filter = filter * keep;
    }
  }
  if (!p.filters.empty())
    mt.add("actor/train_infer_final_mask_mean", masked_mean(m * filter, m).item<double>());
  out.filter_mask = filter;
  return out;
}

}  // namespace roll::rl
