#include "roll/train/grad_norm.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

namespace roll::train {

double squared_norm_sum(const std::vector<at::Tensor>& grads) {
  double sq = 0.0;
  for (const at::Tensor& g : grads) {
    if (!g.defined()) continue;
    at::Tensor n = g.detach().to(g.scalar_type() == at::kDouble ? at::kDouble : at::kFloat).norm();
    double v = n.item<double>();
    sq += v * v;
  }
  return sq;
}

double total_grad_norm(const std::vector<at::Tensor>& grads) { return std::sqrt(squared_norm_sum(grads)); }

double clip_coefficient(double total_norm, double max_norm) {
  return std::min(1.0, max_norm / (total_norm + 1e-6));
}

double clip_grad_norm(std::vector<at::Tensor>& grads, double max_norm) {
  double norm = total_grad_norm(grads);
  if (!is_finite_norm(norm)) return norm;
  double coef = clip_coefficient(norm, max_norm);
  if (coef < 1.0)
    for (at::Tensor& g : grads)
      if (g.defined()) g.mul_(coef);
  return norm;
}

bool is_finite_norm(double norm) { return std::isfinite(norm); }

}  // namespace roll::train
