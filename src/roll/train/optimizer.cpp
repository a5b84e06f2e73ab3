#include "roll/train/optimizer.h"

#include <ATen/ATen.h>
#include <c10/util/BFloat16.h>
#include <fmt/format.h>

#include <immintrin.h>

#include <cmath>

#include "roll/core/avx2_vec.h"
#include "roll/core/cpu_features.h"
#include "roll/core/error.h"
#include "roll/core/parallel_for.h"

namespace roll::train {
namespace {

// Elements per task of the parallel loop: each thread takes whole runs of this many.
constexpr int64_t kGrain = 1 << 16;

// AdamW's per-element constants, as ATen's fp32 kernels take them (a double Scalar cast to float).
struct AdamConstants {
  bool decays;
  float decay, b1, a1, b2, a2, bc2_sqrt, eps, neg_step;
  bool scales;  // the gradient times grad_scale (the clip) as it is read
  float grad_scale;
};

// Where the pass also writes: zeros into the gradient, the bf16 weights.
struct PassOutputs {
  float* zero_grad = nullptr;
  uint16_t* weights_bf16 = nullptr;
};

// torch.optim.AdamW (_single_tensor_adamw) for elements [begin, end): its five whole-tensor
// operations in its order and fp32 (decay; m = m·β1 + (1−β1)·g; v = v·β2 + (1−β2)·g·g;
// denom = sqrt(v)/sqrt(bc2) + eps; p += −lr/bc1 · m/denom), fused so that p, g, m and v are read
// once and p, m and v written once. Returns where the vector loop stopped.
__attribute__((target("avx2,fma"))) int64_t adamw_avx2(const AdamConstants& k, const PassOutputs& out, float* P,
                                                       const float* G, float* M, float* V, int64_t begin,
                                                       int64_t end) {
  const __m256 decay = _mm256_set1_ps(k.decay), b1 = _mm256_set1_ps(k.b1), a1 = _mm256_set1_ps(k.a1),
               b2 = _mm256_set1_ps(k.b2), a2 = _mm256_set1_ps(k.a2), bc2_sqrt = _mm256_set1_ps(k.bc2_sqrt),
               eps = _mm256_set1_ps(k.eps), neg_step = _mm256_set1_ps(k.neg_step),
               grad_scale = _mm256_set1_ps(k.grad_scale);
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    __m256 g = _mm256_loadu_ps(G + i);
    if (k.scales) g = _mm256_mul_ps(g, grad_scale);
    if (out.zero_grad) _mm256_storeu_ps(out.zero_grad + i, _mm256_setzero_ps());
    __m256 p = _mm256_loadu_ps(P + i);
    if (k.decays) p = _mm256_mul_ps(p, decay);
    const __m256 m = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(M + i), b1), _mm256_mul_ps(g, a1));
    const __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(V + i), b2), _mm256_mul_ps(_mm256_mul_ps(a2, g), g));
    const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(v), bc2_sqrt), eps);
    p = _mm256_add_ps(p, _mm256_mul_ps(neg_step, _mm256_div_ps(m, denom)));
    _mm256_storeu_ps(P + i, p);
    _mm256_storeu_ps(M + i, m);
    _mm256_storeu_ps(V + i, v);
    if (out.weights_bf16) core::avx2::store8_bf16(out.weights_bf16 + i, p);
  }
  return i;
}

void adamw_scalar(const AdamConstants& k, const PassOutputs& out, float* P, const float* G, float* M, float* V,
                  int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const float g = k.scales ? G[i] * k.grad_scale : G[i];
    if (out.zero_grad) out.zero_grad[i] = 0.0f;
    const float p = k.decays ? P[i] * k.decay : P[i];
    const float m = M[i] * k.b1 + g * k.a1;
    const float v = V[i] * k.b2 + k.a2 * g * g;
    const float denom = std::sqrt(v) / k.bc2_sqrt + k.eps;
    P[i] = p + k.neg_step * (m / denom);
    M[i] = m;
    V[i] = v;
    if (out.weights_bf16) out.weights_bf16[i] = c10::BFloat16(P[i]).x;  // nearest, ties to even
  }
}

// Whether `extras` can ride along the CPU pass: a gradient written in place (contiguous fp32) and
// bf16 contiguous weights.
bool extras_fuse(const at::Tensor& g, const UpdateExtras& e) {
  if (e.zero_grad && !g.is_contiguous()) return false;
  if (e.weights_out.defined() &&
      (e.weights_out.scalar_type() != at::kBFloat16 || !e.weights_out.is_contiguous() || !e.weights_out.is_cpu()))
    return false;
  return true;
}

// The extras as separate whole-tensor operations, around an update that took the scaled gradient.
void extras_apart_after(const at::Tensor& p, const at::Tensor& g, const UpdateExtras& e) {
  if (e.zero_grad) g.zero_();
  if (e.weights_out.defined()) e.weights_out.copy_(p);
}

void adamw(const OptimizerHyper& h, at::Tensor& p, const at::Tensor& g, OptimizerSlot& s, double lr, int64_t step,
           const UpdateExtras& e) {
  if (!s.exp_avg.defined()) {
    s.exp_avg = at::zeros_like(p);
    s.exp_avg_sq = at::zeros_like(p);
  }
  const double bc1 = 1.0 - std::pow(h.beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(h.beta2, static_cast<double>(step));
  if (!p.is_cpu() || !extras_fuse(g, e)) {  // an accelerator's buffers: ATen's own kernels, one operation each
    if (e.grad_scale != 1.0) g.mul_(e.grad_scale);
    if (h.weight_decay != 0.0) p.mul_(1.0 - lr * h.weight_decay);
    s.exp_avg.mul_(h.beta1).add_(g, 1.0 - h.beta1);
    s.exp_avg_sq.mul_(h.beta2).addcmul_(g, g, 1.0 - h.beta2);
    p.addcdiv_(s.exp_avg, (s.exp_avg_sq.sqrt() / std::sqrt(bc2)).add_(h.eps), -lr / bc1);
    extras_apart_after(p, g, e);
    return;
  }
  const AdamConstants k{h.weight_decay != 0.0,
                        static_cast<float>(1.0 - lr * h.weight_decay),
                        static_cast<float>(h.beta1),
                        static_cast<float>(1.0 - h.beta1),
                        static_cast<float>(h.beta2),
                        static_cast<float>(1.0 - h.beta2),
                        static_cast<float>(std::sqrt(bc2)),
                        static_cast<float>(h.eps),
                        static_cast<float>(-lr / bc1),
                        e.grad_scale != 1.0,
                        static_cast<float>(e.grad_scale)};
  const at::Tensor gc = g.contiguous();
  float* P = p.data_ptr<float>();
  const float* G = gc.data_ptr<float>();
  float* M = s.exp_avg.data_ptr<float>();
  float* V = s.exp_avg_sq.data_ptr<float>();
  PassOutputs out;
  if (e.zero_grad) out.zero_grad = g.data_ptr<float>();
  if (e.weights_out.defined()) out.weights_bf16 = reinterpret_cast<uint16_t*>(e.weights_out.data_ptr<c10::BFloat16>());
  const bool avx2 = core::cpu_features().avx2;
  at::parallel_for(0, p.numel(), kGrain, [&](int64_t begin, int64_t end) {
    const int64_t done = avx2 ? adamw_avx2(k, out, P, G, M, V, begin, end) : begin;
    adamw_scalar(k, out, P, G, M, V, done, end);
  });
}

}  // namespace

void optimizer_update(const OptimizerHyper& h, at::Tensor& param, const at::Tensor& grad, OptimizerSlot& slot,
                      double lr, int64_t step, const UpdateExtras& extras) {
  if (param.scalar_type() != at::kFloat || grad.scalar_type() != at::kFloat || param.numel() != grad.numel() ||
      !param.is_contiguous())
    throw Error("optimizer_update: parameter and gradient must be float32 buffers of the same size (the parameter "
                "contiguous)");
  if (extras.weights_out.defined() && extras.weights_out.numel() != param.numel())
    throw Error("optimizer_update: the weights to write must have the parameter's size");
  if (h.kind == "adamw") {
    adamw(h, param, grad, slot, lr, step, extras);
  } else if (h.kind == "sgd") {
    if (extras.grad_scale != 1.0) grad.mul_(extras.grad_scale);
    if (h.weight_decay != 0.0) param.mul_(1.0 - lr * h.weight_decay);
    param.add_(grad, -lr);
    extras_apart_after(param, grad, extras);
  } else {
    throw ConfigError("optimizer", fmt::format("optimizer '{}' is not supported (adamw, sgd)", h.kind));
  }
}

}  // namespace roll::train
