#pragma once
// The optimizer update over flat fp32 buffers (the strategy keeps parameters, gradients and
// optimizer state as one flat tensor per unit and rank). AdamW follows torch.optim.AdamW
// (foreach=False) operation by operation in one fused pass, so a run matches PyTorch's update to
// rounding.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace roll::train {

struct OptimizerHyper {
  std::string kind = "adamw";  // adamw | sgd
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
};

// One tensor's state. exp_avg / exp_avg_sq are allocated (zeros) on first use for adamw.
struct OptimizerSlot {
  at::Tensor exp_avg, exp_avg_sq;
};

// Updates `param` (fp32, in place) from `grad` (fp32, same size) at learning rate `lr`; `step` is
// the 1-based count of updates so far including this one (Adam's bias correction).
void optimizer_update(const OptimizerHyper& h, at::Tensor& param, const at::Tensor& grad, OptimizerSlot& slot,
                      double lr, int64_t step);

}  // namespace roll::train
