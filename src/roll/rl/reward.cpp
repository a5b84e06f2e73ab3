#include "roll/rl/reward.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <cmath>

#include "roll/core/error.h"
#include "roll/rl/check.h"
#include "roll/rl/masked.h"

namespace roll::rl {
namespace {

void check_groups(const at::Tensor& r, int64_t n, const char* why) {
  if (n <= 0) throw Error(fmt::format("{} needs num_return_sequences >= 1, got {}", why, n));
  if (r.size(0) % n != 0)
    throw Error(fmt::format("{}: response_level_rewards has {} samples, not a multiple of "
                            "num_return_sequences = {} (the n samples of a prompt must be contiguous)",
                            why, r.size(0), n));
}

// Unbiased std along the last dim, 0 where there is a single element (torch gives NaN).
at::Tensor safe_std(const at::Tensor& x) {
  if (x.size(-1) < 2) return at::zeros_like(x.select(-1, 0)).unsqueeze(-1);
  return x.std(-1, /*unbiased=*/true, /*keepdim=*/true);
}

}  // namespace

std::pair<double, double> RunningMoments::update(const at::Tensor& xs) {
  at::Tensor x = xs.detach().to(at::kDouble).reshape({-1});
  double n = static_cast<double>(x.numel());
  if (n == 0) throw Error("RunningMoments.update: empty reward tensor");
  double batch_mean = x.mean().item<double>();
  double batch_var = (x - batch_mean).pow(2).mean().item<double>();  // biased, as torch.var_mean(unbiased=False)
  double delta = batch_mean - mean_;
  double tot = count_ + n;
  double old_sum = var_ * count_ + delta * delta * count_ * n / tot;
  mean_ += delta * n / tot;
  var_ = (old_sum + batch_var * n) / tot;
  // After a first batch of one sample N−1 is 0 (1 + 1e-24 rounds to 1): the std is undefined; use 0.
  std_ = tot > 1.0 ? std::sqrt(var_ * tot / (tot - 1.0)) : 0.0;
  count_ = tot;
  double batch_std = n > 1 ? std::sqrt(batch_var * n / (n - 1.0)) : 0.0;
  return {batch_mean, batch_std};
}

namespace {

// Per-sample [B] vectors of the mean and std each type asks for, so any mix of batch/group/running
// types broadcasts right (ROLL broadcasts a [G,1] group std against a [B] batch-mean result into a
// [G,B] matrix).
at::Tensor mean_vector(const at::Tensor& r, int64_t n, NormType type, const RunningMoments* running) {
  const int64_t B = r.size(0);
  switch (type) {
    case NormType::batch: return r.mean().expand({B});
    case NormType::group: return r.reshape({-1, n}).mean(-1, true).expand({-1, n}).reshape({B});
    case NormType::running: return at::full({B}, running->mean(), r.options());
    case NormType::none: break;
  }
  return at::zeros({B}, r.options());
}

at::Tensor std_vector(const at::Tensor& r, int64_t n, NormType type, const RunningMoments* running) {
  const int64_t B = r.size(0);
  switch (type) {
    case NormType::batch: return (B > 1 ? r.std() : at::zeros({}, r.options())).expand({B});
    case NormType::group: return safe_std(r.reshape({-1, n})).expand({-1, n}).reshape({B});
    case NormType::running: return at::full({B}, running->std(), r.options());
    case NormType::none: break;
  }
  return at::ones({B}, r.options());
}

// Validates the group view and updates `running` once, before either statistic is read.
void prepare_norm(const at::Tensor& r, int64_t n, NormType mean_type, NormType std_type, RunningMoments* running) {
  if (mean_type == NormType::group || std_type == NormType::group) check_groups(r, n, "group reward normalisation");
  if (mean_type == NormType::running || std_type == NormType::running) {
    if (!running) throw Error("running reward normalisation needs the domain's RunningMoments");
    running->update(r);
  }
}

}  // namespace

at::Tensor reward_norm(const at::Tensor& rewards, int64_t n, NormType mean_type, NormType std_type,
                       RunningMoments* running) {
  detail::check_dims(rewards, "response_level_rewards", {-1});
  prepare_norm(rewards, n, mean_type, std_type, running);
  at::Tensor centred = rewards - mean_vector(rewards, n, mean_type, running);
  if (std_type == NormType::none) return centred;
  return centred / (std_vector(rewards, n, std_type, running) + 1e-6);
}

at::Tensor leave_one_out_baseline(const at::Tensor& rewards, int64_t n) {
  detail::check_dims(rewards, "response_level_rewards", {-1});
  if (n < 2)
    throw Error(fmt::format("adv_estimator rloo needs num_return_sequences >= 2 (the baseline of a sample is "
                            "the mean of the other samples of its prompt); got {}",
                            n));
  check_groups(rewards, n, "rloo");
  at::Tensor g = rewards.reshape({-1, n});
  at::Tensor others_mean = (g.sum(-1, true) - g) / static_cast<double>(n - 1);
  return (g - others_mean).reshape({rewards.size(0)});
}

RewardPostprocessResult reward_postprocess(const at::Tensor& response_level_rewards,
                                           const RewardPostprocessParams& p, RunningMoments* running) {
  detail::check_dims(response_level_rewards, "response_level_rewards", {-1});
  detail::check_finite(response_level_rewards, "response_level_rewards");
  RewardPostprocessResult out;
  out.mean_type = p.norm_mean_type;
  out.std_type = p.norm_std_type;
  at::Tensor r = response_level_rewards.detach();
  if (p.adv_estimator == AdvEstimator::grpo) {
    out.mean_type = NormType::group;
    out.std_type = NormType::group;
  }
  if (p.adv_estimator == AdvEstimator::rloo) {
    // The leave-one-out mean replaces the mean type; a std type still scales.
    out.mean_type = NormType::none;
    at::Tensor centred = leave_one_out_baseline(r, p.num_return_sequences);
    if (out.std_type != NormType::none) {
      prepare_norm(r, p.num_return_sequences, NormType::none, out.std_type, running);
      centred = centred / (std_vector(r, p.num_return_sequences, out.std_type, running) + 1e-6);
    }
    r = centred;
  } else {
    r = reward_norm(r, p.num_return_sequences, out.mean_type, out.std_type, running);
  }
  double frac = 0.0;
  if (p.reward_clip) {
    double c = *p.reward_clip;
    frac = clip_fraction(r, -c, c);
    r = at::clamp(r, -c, c);
  }
  out.metrics.add("critic/reward_clip_frac", frac);
  out.rewards = r;
  return out;
}

RewardPostprocessResult reward_postprocess(const at::Tensor& response_level_rewards,
                                           const RewardPostprocessParams& params, RunningMomentsMap& running,
                                           std::string_view domain) {
  auto it = running.find(domain);
  if (it == running.end()) it = running.emplace(std::string(domain), RunningMoments{}).first;
  return reward_postprocess(response_level_rewards, params, &it->second);
}

at::Tensor expand_to_token_level(const at::Tensor& rewards, const at::Tensor& attention_mask,
                                 const at::Tensor& position_ids) {
  detail::check_dims(rewards, "response_level_rewards", {-1});
  const int64_t B = rewards.size(0);
  detail::check_dims(attention_mask, "attention_mask", {B, -1});
  at::Tensor pos = position_ids;
  if (pos.defined() && pos.dim() == 3) pos = pos.select(1, 0);  // mRoPE: text channels agree
  detail::check_same_shape(pos, "position_ids", attention_mask, "attention_mask");
  at::Tensor eos = at::argmax(pos * attention_mask, -1);  // [B]
  at::Tensor tlr = at::zeros(attention_mask.sizes(), rewards.options());
  tlr.scatter_(1, eos.unsqueeze(1), rewards.detach().unsqueeze(1));
  return tlr.narrow(1, 1, tlr.size(1) - 1);
}

TokenRewardResult compute_token_reward(const TokenRewardInputs& in, const TokenRewardParams& p,
                                       KlController& kl_ctrl) {
  detail::check_finite(in.response_level_rewards, "response_level_rewards");
  at::Tensor tlr = expand_to_token_level(in.response_level_rewards, in.attention_mask, in.position_ids);
  detail::check_same_shape(in.response_mask, "response_mask[:, 1:]", tlr, "token_level_rewards");
  detail::check_same_shape(in.old_log_probs, "old_log_probs", tlr, "token_level_rewards");
  TokenRewardResult out;
  double beta = 0.0;
  if (in.ref_log_probs.defined()) {
    detail::check_same_shape(in.ref_log_probs, "ref_log_probs", tlr, "token_level_rewards");
    out.kl = compute_approx_kl(in.old_log_probs.detach(), in.ref_log_probs.detach(), in.response_mask,
                               p.kl_penalty);
    if (p.add_token_level_kl) {
      beta = kl_ctrl.value();
      tlr = tlr - beta * out.kl;
    }
  } else {
    out.kl = at::zeros_like(tlr);
  }
  double current_kl = masked_mean_rows(out.kl, in.response_mask).mean().item<double>();
  kl_ctrl.update(current_kl, tlr.size(0));
  out.metrics.add("critic/kl", current_kl);
  out.metrics.add("critic/kl_coef", beta);
  if (p.reward_clip) {
    double c = *p.reward_clip;
    out.metrics.add("critic/token_reward_clip_frac", clip_fraction(tlr, -c, c));
    tlr = at::clamp(tlr, -c, c);
  }
  out.token_level_rewards = tlr;
  return out;
}

}  // namespace roll::rl
