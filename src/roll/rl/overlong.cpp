#include "roll/rl/overlong.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "roll/core/error.h"
#include "roll/rl/check.h"

namespace roll::rl {

at::Tensor overlong_penalty(const at::Tensor& response_lengths, int64_t max_len, const OverlongParams& p) {
  detail::check_dims(response_lengths, "response_lengths", {-1});
  at::Tensor len = response_lengths.to(at::kFloat);
  if (!p.enable) return at::zeros_like(len);
  if (p.buffer_len <= 0 || p.buffer_len > max_len)
    throw Error(fmt::format("overlong_reward.buffer_len must be in (0, max response length {}], got {}", max_len,
                            p.buffer_len));
  double expected = static_cast<double>(max_len - p.buffer_len);
  // (expected − L)/L_buf is >= 0 before the buffer, in (−1, 0] inside it and < −1 past L_max.
  at::Tensor pen = at::clamp((expected - len) / static_cast<double>(p.buffer_len), -1.0, 0.0);
  return pen * p.penalty_factor;
}

OverlongResult apply_overlong_penalty(const at::Tensor& rewards, const at::Tensor& response_lengths,
                                      int64_t max_len, const OverlongParams& p) {
  detail::check_dims(rewards, "response_level_rewards", {-1});
  detail::check_same_shape(rewards, "response_level_rewards", response_lengths, "response_lengths");
  OverlongResult out;
  out.penalty = overlong_penalty(response_lengths, max_len, p).to(rewards.scalar_type());
  out.rewards = rewards + out.penalty;
  if (p.enable) out.metrics = overlong_metrics(out.penalty);
  return out;
}

MetricMap overlong_metrics(const at::Tensor& penalty) {
  MetricMap m;
  m.add("critic/overlong_penalty_mean", penalty.mean().item<double>());
  m.add("critic/overlong_penalized_ratio", (penalty < 0).to(at::kFloat).mean().item<double>());
  return m;
}

}  // namespace roll::rl
