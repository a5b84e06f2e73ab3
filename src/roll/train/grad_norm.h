#pragma once
// Gradient-norm math of the train step (docs/rl.md): total L2 norm over a list of gradients, the clip
// coefficient, in-place clipping, and the non-finite check that skips an optimizer step.
#include <ATen/core/Tensor.h>

#include <vector>

namespace roll::train {

// Σ_g ||g||² over the defined tensors, each norm in fp32 or wider, summed in double: what ranks
// holding chunks of the gradient all-reduce before the square root.
double squared_norm_sum(const std::vector<at::Tensor>& grads);
// sqrt(Σ_g ||g||²) over the defined tensors (undefined ones, i.e. parameters without a gradient, are
// skipped; none at all gives 0). Accumulated in fp32 or wider.
double total_grad_norm(const std::vector<at::Tensor>& grads);
// min(1, max_norm / (total_norm + 1e-6)), torch.nn.utils.clip_grad_norm_'s factor.
double clip_coefficient(double total_norm, double max_norm);
// Scales the gradients in place when the norm exceeds max_norm; returns the norm before clipping.
// A non-finite norm leaves the gradients untouched (the step is skipped, see is_finite_norm).
double clip_grad_norm(std::vector<at::Tensor>& grads, double max_norm);
bool is_finite_norm(double norm);

}  // namespace roll::train
