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

// What the step does around the update, folded into AdamW's one pass over the buffers on CPU
// (each is otherwise a pass of its own over gigabytes at 0.5B): the clip coefficient applied to
// the gradient as it is read (as grad.mul_(scale) before the update would), the gradient zeroed
// after, and the updated parameter written out in bf16 (rounded to nearest even, as a copy_ would).
struct UpdateExtras {
  double grad_scale = 1.0;
  bool zero_grad = false;
  at::Tensor weights_out;  // the model's weights the fp32 master mirrors (same size), or undefined
};

// Updates `param` (fp32, in place) from `grad` (fp32, same size) at learning rate `lr`; `step` is
// the 1-based count of updates so far including this one (Adam's bias correction). `extras` are
// carried out whichever way the update runs.
void optimizer_update(const OptimizerHyper& h, at::Tensor& param, const at::Tensor& grad, OptimizerSlot& slot,
                      double lr, int64_t step, const UpdateExtras& extras = {});

}  // namespace roll::train
