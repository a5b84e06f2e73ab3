#include "roll/rl/advantage.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <vector>

#include "roll/core/error.h"
#include "roll/rl/check.h"
#include "roll/rl/masked.h"

namespace roll::rl {

// The reverse scans below are sequential in t; each step works on a [B] column, as the brief for fast
// [B, S] code asks. Columns are taken from a transposed contiguous copy so each select is contiguous.

std::pair<at::Tensor, at::Tensor> gae_advantage_return(const at::Tensor& rewards, const at::Tensor& values,
                                                       double gamma, double lambd) {
  detail::check_dims(rewards, "token_level_rewards", {-1, -1});
  detail::check_same_shape(values, "values", rewards, "token_level_rewards");
  const int64_t T = rewards.size(1);
  at::Tensor r = rewards.t().contiguous();
  at::Tensor v = values.t().contiguous().to(r.scalar_type());
  at::Tensor adv = at::empty_like(r);
  at::Tensor last = at::zeros({rewards.size(0)}, r.options());
  for (int64_t t = T - 1; t >= 0; --t) {
    at::Tensor next_v = t + 1 < T ? v[t + 1] : at::zeros_like(last);
    at::Tensor delta = r[t] + gamma * next_v - v[t];
    last = delta + gamma * lambd * last;
    adv[t].copy_(last);
  }
  adv = adv.t().contiguous();
  return {adv, adv + values.to(adv.scalar_type())};
}

at::Tensor discounted_return(const at::Tensor& rewards, double gamma) {
  detail::check_dims(rewards, "token_level_rewards", {-1, -1});
  const int64_t T = rewards.size(1);
  at::Tensor r = rewards.t().contiguous();
  at::Tensor out = at::empty_like(r);
  at::Tensor run = at::zeros({rewards.size(0)}, r.options());
  for (int64_t t = T - 1; t >= 0; --t) {
    run = r[t] + gamma * run;
    out[t].copy_(run);
  }
  return out.t().contiguous();
}

at::Tensor segment_discounted_return(const at::Tensor& rewards, const at::Tensor& mask, double gamma) {
  detail::check_dims(rewards, "token_level_rewards", {-1, -1});
  detail::check_same_shape(mask, "mask", rewards, "token_level_rewards");
  const int64_t T = rewards.size(1);
  at::Tensor m = mask.to(at::kBool).t().contiguous();
  // A turn ends at t when m_t = 1 and m_{t+1} = 0 (or t is the last column).
  at::Tensor next = at::zeros_like(m);
  if (T > 1) next.narrow(0, 0, T - 1).copy_(m.narrow(0, 1, T - 1));
  at::Tensor is_end = at::logical_and(m, at::logical_not(next));
  at::Tensor r = rewards.t().contiguous();
  at::Tensor out = at::empty_like(r);
  at::Tensor run = at::zeros({rewards.size(0)}, r.options());
  for (int64_t t = T - 1; t >= 0; --t) {
    run = at::where(is_end[t], r[t] + gamma * run, run);
    out[t].copy_(run);
  }
  return (out * m.to(out.scalar_type())).t().contiguous();
}

AdvantageResult compute_advantage(const AdvantageInputs& in, const AdvantageParams& p) {
  detail::check_dims(in.token_level_rewards, "token_level_rewards", {-1, -1});
  detail::check_same_shape(in.mask, "mask", in.token_level_rewards, "token_level_rewards");
  detail::check_finite(in.token_level_rewards, "token_level_rewards");
  AdvantageResult out;
  at::Tensor R = in.token_level_rewards.detach().to(at::kFloat);
  at::Tensor M = detail::as_mask(in.mask, R);
  bool whiten_r = p.whiten_rewards, whiten_a = p.whiten_advantages;
  // Whitening needs two tokens for its unbiased variance; ROLL's spec skips it at <= 1.
  if (M.sum().item<double>() <= 1.0 && (whiten_r || whiten_a)) {
    whiten_r = whiten_a = false;
    out.whitening_skipped = true;
  }
  at::Tensor A, ret;
  if (in.pure_opd) {
    detail::check_same_shape(in.opd_penalty, "opd_penalty", R, "token_level_rewards");
    A = -in.opd_penalty.detach().to(R.scalar_type());
    ret = A;
    out.raw_advantages = A;
  } else {
    if (whiten_r) R = masked_whiten(R, M, true, "token_level_rewards");
    R = R * M;
    switch (p.estimator) {
      case AdvEstimator::gae: {
        if (!in.values.defined()) throw Error("adv_estimator gae needs the critic's 'values' tensor");
        detail::check_same_shape(in.values, "values", R, "token_level_rewards");
        out.values = in.values.detach().to(R.scalar_type()) * M;
        std::tie(A, ret) = gae_advantage_return(R, out.values, p.gamma, p.lambd);
        break;
      }
      case AdvEstimator::reinforce:
      case AdvEstimator::grpo:
      case AdvEstimator::gigpo:
      case AdvEstimator::step_reinforce:
      case AdvEstimator::rloo:
        A = discounted_return(R, p.gamma);
        ret = A;
        break;
      case AdvEstimator::agentic_reinforce:
        A = segment_discounted_return(R, M, p.gamma);
        ret = A;
        break;
    }
    out.raw_advantages = A;
    if (in.opd_penalty.defined()) {
      detail::check_same_shape(in.opd_penalty, "opd_penalty", R, "token_level_rewards");
      A = A - in.opd_penalty.detach().to(A.scalar_type());
    }
  }
  out.token_level_rewards = R;
  if (whiten_a) A = masked_whiten(A, M, true, "advantages");
  A = A * M;
  if (p.advantage_clip) {
    double c = *p.advantage_clip;
    out.metrics.add("critic/advantage_clip_frac", clip_fraction(A, -c, c));
    A = at::clamp(A, -c, c);
  }
  out.advantages = A;
  out.returns = ret;
  return out;
}

}  // namespace roll::rl
