#include "roll/rl/masked.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "roll/core/error.h"
#include "roll/rl/check.h"

namespace roll::rl {

at::Tensor masked_mean(const at::Tensor& x, const at::Tensor& mask) {
  at::Tensor m = detail::as_mask(mask, x);
  return (x * m).sum() / (m.sum() + 1e-8);
}

at::Tensor masked_mean_rows(const at::Tensor& x, const at::Tensor& mask) {
  at::Tensor m = detail::as_mask(mask, x);
  at::Tensor msum = m.sum(-1);
  return at::where(msum > 0, (x * m).sum(-1) / (msum + 1e-8), at::zeros_like(msum));
}

at::Tensor masked_sum_rows(const at::Tensor& x, const at::Tensor& mask) {
  at::Tensor m = detail::as_mask(mask, x);
  at::Tensor msum = m.sum(-1);
  return at::where(msum > 0, (x * m).sum(-1), at::zeros_like(msum));
}

at::Tensor masked_var(const at::Tensor& x, const at::Tensor& mask, bool unbiased, const char* name) {
  at::Tensor m = detail::as_mask(mask, x);
  double n = m.sum().item<double>();
  if (n == 0) throw Error(fmt::format("masked_var of '{}': the mask selects no element", name));
  if (unbiased && n == 1)
    throw Error(fmt::format("masked_var of '{}': the mask selects one element; the unbiased variance "
                            "divides by zero",
                            name));
  at::Tensor mean = masked_mean(x, m);
  at::Tensor var = masked_mean((x - mean).pow(2), m);
  if (unbiased) var = var * (n / (n - 1));
  return var;
}

at::Tensor masked_whiten(const at::Tensor& x, const at::Tensor& mask, bool shift_mean, const char* name) {
  at::Tensor mean = masked_mean(x, mask);
  at::Tensor var = masked_var(x, mask, true, name);
  at::Tensor out = (x - mean) * at::rsqrt(var + 1e-8);
  if (!shift_mean) out = out + mean;
  return out;
}

at::Tensor segment_ids(const at::Tensor& mask) {
  at::Tensor m = mask.to(at::kBool);
  // A segment starts where the mask is 1 and the previous position is 0 (or the row starts).
  at::Tensor prev = at::zeros_like(m);
  if (m.size(-1) > 1) prev.narrow(-1, 1, m.size(-1) - 1).copy_(m.narrow(-1, 0, m.size(-1) - 1));
  at::Tensor start = at::logical_and(m, at::logical_not(prev));
  return start.to(at::kLong).cumsum(-1) * m.to(at::kLong);
}

at::Tensor segment_masked_mean(const at::Tensor& x, const at::Tensor& mask) {
  detail::check_same_shape(x, "tensor", mask, "mask");
  detail::check_dims(x, "tensor", {-1, -1});
  at::Tensor ids = segment_ids(mask);
  at::Tensor m = detail::as_mask(mask.to(at::kBool), x);
  const int64_t T = x.size(1);
  // Segment k of a row accumulates into column k of a [B, T+1] table (column 0 collects the unmasked
  // positions, whose values are zeroed first), so one scatter_add does every segment of every row.
  at::Tensor zeros = at::zeros({x.size(0), T + 1}, x.options());
  at::Tensor sums = at::scatter_add(zeros, 1, ids, x * m);
  at::Tensor counts = at::scatter_add(zeros.detach(), 1, ids, m);
  at::Tensor means = sums / counts.clamp_min(1.0);
  return at::gather(means, 1, ids) * m;
}

double clip_fraction(const at::Tensor& values, double lo, double hi) {
  int64_t n = values.numel();
  if (n == 0) return 0.0;
  at::Tensor v = values.detach();
  int64_t clipped = (v > hi).sum().item<int64_t>() + (v < lo).sum().item<int64_t>();
  return static_cast<double>(clipped) / static_cast<double>(n);
}

}  // namespace roll::rl
