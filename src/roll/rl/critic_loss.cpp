#include "roll/rl/critic_loss.h"

#include <ATen/ATen.h>

#include "roll/rl/check.h"
#include "roll/rl/masked.h"

namespace roll::rl {

ValueLossResult value_loss(const at::Tensor& values, const at::Tensor& old_values, const at::Tensor& returns,
                           const at::Tensor& mask, std::optional<double> value_clip) {
  detail::check_dims(values, "values", {-1, -1});
  detail::check_same_shape(old_values, "old_values", values, "values");
  detail::check_same_shape(returns, "returns", values, "values");
  detail::check_same_shape(mask, "response_mask", values, "values");
  at::Tensor ret = returns.detach().to(values.scalar_type());
  at::Tensor old = old_values.detach().to(values.scalar_type());
  at::Tensor m = detail::as_mask(mask, values);
  at::Tensor surr1 = (values - ret).pow(2);
  at::Tensor loss_t;
  double clipfrac = 0.0;
  if (value_clip) {
    double c = *value_clip;
    at::Tensor clipped = at::max(at::min(values, old + c), old - c);
    at::Tensor surr2 = (clipped - ret).pow(2);
    loss_t = at::max(surr1, surr2);
    clipfrac = masked_mean_rows(at::gt(surr2, surr1).to(values.scalar_type()), m).mean().item<double>();
  } else {
    loss_t = surr1;
  }
  ValueLossResult out;
  out.loss = 0.5 * masked_mean_rows(loss_t, m).mean();
  out.metrics.add("critic/loss", out.loss.detach().item<double>());
  out.metrics.add("critic/value", masked_mean_rows(old, m).mean().item<double>());
  out.metrics.add("critic/vpred", masked_mean_rows(values.detach(), m).mean().item<double>());
  out.metrics.add("critic/clipfrac", clipfrac);
  out.metrics.add("critic/error", masked_mean_rows(surr1.detach(), m).mean().item<double>());
  return out;
}

}  // namespace roll::rl
