#include "roll/rl/masks.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "roll/core/error.h"
#include "roll/rl/check.h"

namespace roll::rl {
namespace {

void finish(SampleMaskResult& out, const at::Tensor& m, const at::Tensor& keep) {
  const int64_t B = m.size(0);
  out.keep = keep;
  out.final_response_mask = m * keep.unsqueeze(-1).to(m.scalar_type());
  out.metrics.add("actor/final_mask_ratio", keep.mean().item<double>());
  out.metrics.add("actor/samples_used", keep.sum().item<double>());
  out.metrics.add("actor/samples_total", static_cast<double>(B));
  out.skip_step = out.final_response_mask.sum().item<double>() == 0;
  if (out.skip_step) out.metrics.add("mask/final_mask_sum_eq_0", 1.0);
}

}  // namespace

SampleMaskResult sample_level_mask(const at::Tensor& response_mask, int64_t max_response_length,
                                   const at::Tensor& scores, const SampleMaskParams& p) {
  detail::check_dims(response_mask, "response_mask[:, 1:]", {-1, -1});
  const int64_t B = response_mask.size(0);
  SampleMaskResult out;
  at::Tensor len = response_mask.to(at::kFloat).sum(-1);
  at::Tensor keep = at::ones({B}, at::kFloat);
  if (p.max_len_mask) {
    at::Tensor mk = (len != static_cast<double>(max_response_length)).to(at::kFloat);
    keep = keep * mk;
    out.metrics.add("actor/max_len_mask_ratio", mk.mean().item<double>());
  } else {
    out.metrics.add("actor/max_len_mask_ratio", 1.0);
  }
  if ((p.difficulty_mask || p.error_max_len_clip)) {
    detail::check_dims(scores, "scores", {B});
    detail::check_finite(scores, "scores");
  }
  if (p.difficulty_mask && p.num_return_sequences > 1) {
    const int64_t n = p.num_return_sequences;
    if (B % n != 0)
      throw Error(fmt::format("difficulty_mask: scores has {} samples, not a multiple of num_return_sequences = {}",
                              B, n));
    at::Tensor mean = scores.to(at::kFloat).reshape({-1, n}).mean(-1, true).expand({-1, n}).reshape({B});
    at::Tensor mk = at::logical_and(mean > p.difficulty_low_threshold, mean < p.difficulty_high_threshold)
                        .to(at::kFloat);
    keep = keep * mk;
    out.metrics.add("actor/difficulty_mask_ratio", mk.mean().item<double>());
  } else {
    // n == 1: ROLL's difficulty mask is all ones.
    out.metrics.add("actor/difficulty_mask_ratio", 1.0);
  }
  if (p.error_max_len_clip) {
    at::Tensor s = scores.to(at::kFloat);
    at::Tensor mk = at::logical_or(at::logical_and(s == 0, len < static_cast<double>(p.error_max_len_threshold)),
                                   s == 1)
                        .to(at::kFloat);
    keep = keep * mk;
    out.metrics.add("actor/error_len_mask_ratio", mk.mean().item<double>());
  } else {
    out.metrics.add("actor/error_len_mask_ratio", 1.0);
  }
  finish(out, response_mask, keep.to(response_mask.is_floating_point() ? response_mask.scalar_type() : at::kFloat));
  return out;
}

SampleMaskResult agentic_response_level_mask(const at::Tensor& response_mask) {
  detail::check_dims(response_mask, "response_mask[:, 1:]", {-1, -1});
  SampleMaskResult out;
  out.metrics.add("actor/max_len_mask_ratio", 1.0);
  finish(out, response_mask, at::ones({response_mask.size(0)}, at::kFloat));
  return out;
}

}  // namespace roll::rl
