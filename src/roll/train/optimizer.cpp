#include "roll/train/optimizer.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <cmath>

#include "roll/core/error.h"

namespace roll::train {
namespace {

// Elements per slice: the five AdamW passes then run over data that stays in L2 (the whole-buffer
// form streams the buffers five times and allocates a full-size temporary).
constexpr int64_t kSlice = 1 << 16;

void adamw(const OptimizerHyper& h, at::Tensor& p, const at::Tensor& g, OptimizerSlot& s, double lr, int64_t step) {
  if (!s.exp_avg.defined()) {
    s.exp_avg = at::zeros_like(p);
    s.exp_avg_sq = at::zeros_like(p);
  }
  const double bc1 = 1.0 - std::pow(h.beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(h.beta2, static_cast<double>(step));
  const double step_size = lr / bc1;
  const double bc2_sqrt = std::sqrt(bc2);
  const int64_t n = p.numel();
  at::Tensor pf = p.view({-1}), gf = g.view({-1}), mf = s.exp_avg.view({-1}), vf = s.exp_avg_sq.view({-1});
  for (int64_t off = 0; off < n; off += kSlice) {
    const int64_t len = std::min(kSlice, n - off);
    at::Tensor pp = pf.narrow(0, off, len), gg = gf.narrow(0, off, len), m = mf.narrow(0, off, len),
               v = vf.narrow(0, off, len);
    // torch.optim.AdamW (_single_tensor_adamw), in its order.
    if (h.weight_decay != 0.0) pp.mul_(1.0 - lr * h.weight_decay);
    m.mul_(h.beta1).add_(gg, 1.0 - h.beta1);
    v.mul_(h.beta2).addcmul_(gg, gg, 1.0 - h.beta2);
    at::Tensor denom = (v.sqrt() / bc2_sqrt).add_(h.eps);
    pp.addcdiv_(m, denom, -step_size);
  }
}

}  // namespace

void optimizer_update(const OptimizerHyper& h, at::Tensor& param, const at::Tensor& grad, OptimizerSlot& slot,
                      double lr, int64_t step) {
  if (param.scalar_type() != at::kFloat || grad.scalar_type() != at::kFloat || param.numel() != grad.numel())
    throw Error("optimizer_update: parameter and gradient must be float32 buffers of the same size");
  if (h.kind == "adamw") {
    adamw(h, param, grad, slot, lr, step);
  } else if (h.kind == "sgd") {
    if (h.weight_decay != 0.0) param.mul_(1.0 - lr * h.weight_decay);
    param.add_(grad, -lr);
  } else {
    throw ConfigError("optimizer", fmt::format("optimizer '{}' is not supported (adamw, sgd)", h.kind));
  }
}

}  // namespace roll::train
