#include "roll/model/lora_linear.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include "roll/model/lora_merge_kernel.h"

namespace roll::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

at::Tensor base_linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  return b.defined() ? at::linear(x, w, b) : at::linear(x, w);
}

// PEFT's formula as autograd records it.
at::Tensor composite(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const at::Tensor& a,
                     const at::Tensor& bm, double scale, double dropout) {
  at::Tensor y = base_linear(x, w, b);
  at::Tensor in = x.to(a.scalar_type());
  if (dropout > 0) in = at::dropout(in, dropout, /*train=*/true);
  return y + (at::linear(at::linear(in, a), bm) * scale).to(y.scalar_type());
}

// x2 [N, in] -> y [N, out] = x2 Wᵀ + b + scale · u Bᵀ with u = x2 Aᵀ (fp32) returned beside it.
std::pair<at::Tensor, at::Tensor> fused_forward(const at::Tensor& x2, const at::Tensor& w, const at::Tensor& b,
                                                const at::Tensor& a, const at::Tensor& bm, double scale) {
  at::Tensor y = base_linear(x2, w, b).contiguous();
  at::Tensor u = at::mm(x2.to(at::kFloat), a.t());
  lora_merge_cpu(y, y, bm.t().contiguous(), u, scale);
  return {y, u};
}

struct LoraLinearFn : public torch::autograd::Function<LoraLinearFn> {
  // The bias is optional for autograd: an undefined tensor argument has no device to record.
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x2, const at::Tensor& w,
                            const c10::optional<at::Tensor>& b, const at::Tensor& a, const at::Tensor& bm,
                            double scale) {
    at::NoGradGuard no_grad;
    auto [y, u] = fused_forward(x2, w, b.value_or(at::Tensor()), a, bm, scale);
    ctx->save_for_backward({x2, w, a, bm, u});
    ctx->saved_data["scale"] = scale;
    // needs_input_grad counts the tensor inputs only: A and B follow the bias when there is one.
    ctx->saved_data["a_input"] = static_cast<int64_t>(b.has_value() ? 3 : 2);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor &x2 = saved[0], &w = saved[1], &a = saved[2], &bm = saved[3], &u = saved[4];
    const double scale = ctx->saved_data["scale"].toDouble();
    const auto a_input = static_cast<size_t>(ctx->saved_data["a_input"].toInt());
    const at::Tensor g = grads[0].contiguous();
    const at::Tensor g32 = g.to(at::kFloat);
    const at::Tensor gb = at::mm(g32, bm);  // [N, rank]
    at::Tensor dx;
    if (ctx->needs_input_grad(0)) {
      dx = at::mm(g, w).contiguous();
      lora_merge_cpu(dx, dx, a, gb, scale);
    }
    at::Tensor da = ctx->needs_input_grad(a_input) ? at::mm(gb.t(), x2.to(at::kFloat)).mul_(scale) : at::Tensor();
    at::Tensor db = ctx->needs_input_grad(a_input + 1) ? at::mm(g32.t(), u).mul_(scale) : at::Tensor();
    return {dx, at::Tensor(), at::Tensor(), da, db, at::Tensor()};
  }
};

bool fused_applies(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const at::Tensor& a,
                   const at::Tensor& bm, double dropout) {
  const bool grad = at::GradMode::is_enabled();
  if (grad && (w.requires_grad() || (b.defined() && b.requires_grad()))) return false;
  // The caller asks for dropout in a training forward only, which may run without autograd (a
  // checkpointed layer's first pass).
  if (dropout > 0) return false;
  const auto dtype = w.scalar_type();
  return x.device().is_cpu() && w.device().is_cpu() && a.scalar_type() == at::kFloat &&
         bm.scalar_type() == at::kFloat && x.scalar_type() == dtype && (dtype == at::kFloat || dtype == at::kBFloat16);
}

}  // namespace

at::Tensor lora_linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const at::Tensor& a,
                       const at::Tensor& bm, double scale, double dropout) {
  if (!fused_applies(x, w, b, a, bm, dropout)) return composite(x, w, b, a, bm, scale, dropout);
  auto out_shape = x.sizes().vec();
  out_shape.back() = w.size(0);
  const at::Tensor x2 = x.reshape({-1, x.size(-1)}).contiguous();
  const bool record =
      at::GradMode::is_enabled() && (x.requires_grad() || a.requires_grad() || bm.requires_grad());
  at::Tensor y = record ? LoraLinearFn::apply(x2, w, b.defined() ? c10::optional<at::Tensor>(b) : c10::nullopt, a, bm, scale) : fused_forward(x2, w, b, a, bm, scale).first;
  return y.view(out_shape);
}

}  // namespace roll::model
