#include "roll/model/swiglu.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <cstdint>

#include "roll/core/avx2_vec.h"
#include "roll/core/cpu_features.h"

namespace roll::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
namespace v8 = core::avx2;

using v8::load8;
using v8::store8;

// sigmoid(g) = 1 / (1 + exp(-g)).
ROLL_AVX2 inline __m256 sigmoid8(__m256 g) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, v8::exp8(_mm256_sub_ps(_mm256_setzero_ps(), g))));
}

inline float sigmoid(float g) { return 1.0f / (1.0f + std::exp(-g)); }

template <typename T>
ROLL_AVX2 void forward_avx2(T* act, const T* g, const T* u, int64_t i0, int64_t i1) {
  int64_t i = i0;
  for (; i + 8 <= i1; i += 8) {
    const __m256 gv = load8(g + i);
    store8(act + i, _mm256_mul_ps(_mm256_mul_ps(gv, sigmoid8(gv)), load8(u + i)));
  }
  for (; i < i1; ++i) {
    const float gi = static_cast<float>(g[i]);
    act[i] = static_cast<T>(gi * sigmoid(gi) * static_cast<float>(u[i]));
  }
}

// d silu(g) / dg = s (1 + g (1 - s)) with s = sigmoid(g).
template <typename T>
ROLL_AVX2 void backward_avx2(T* dg, T* du, const T* d, const T* g, const T* u, int64_t i0, int64_t i1) {
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = i0;
  for (; i + 8 <= i1; i += 8) {
    const __m256 gv = load8(g + i), dv = load8(d + i), s = sigmoid8(gv);
    store8(du + i, _mm256_mul_ps(dv, _mm256_mul_ps(gv, s)));
    const __m256 dsilu = _mm256_mul_ps(s, _mm256_fmadd_ps(gv, _mm256_sub_ps(one, s), one));
    store8(dg + i, _mm256_mul_ps(_mm256_mul_ps(dv, load8(u + i)), dsilu));
  }
  for (; i < i1; ++i) {
    const float gi = static_cast<float>(g[i]), di = static_cast<float>(d[i]), s = sigmoid(gi);
    du[i] = static_cast<T>(di * gi * s);
    dg[i] = static_cast<T>(di * static_cast<float>(u[i]) * s * (1.0f + gi * (1.0f - s)));
  }
}

constexpr int64_t kGrain = 1 << 14;

at::Tensor forward_cpu(const at::Tensor& g, const at::Tensor& u) {
  at::Tensor act = at::empty_like(g);
  core::with_float_or_bf16(g.scalar_type() == at::kBFloat16, [&](auto zero) {
    using T = decltype(zero);
    T* a = act.data_ptr<T>();
    const T *gp = g.data_ptr<T>(), *up = u.data_ptr<T>();
    at::parallel_for(0, g.numel(), kGrain, [&](int64_t i0, int64_t i1) { forward_avx2(a, gp, up, i0, i1); });
  });
  return act;
}

struct SwigluFn : public torch::autograd::Function<SwigluFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& g, const at::Tensor& u) {
    ctx->save_for_backward({g, u});
    return forward_cpu(g, u);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor &g = saved[0], &u = saved[1];
    const at::Tensor d = grads[0].to(g.scalar_type()).contiguous();
    at::Tensor dg = at::empty_like(g), du = at::empty_like(u);
    core::with_float_or_bf16(g.scalar_type() == at::kBFloat16, [&](auto zero) {
      using T = decltype(zero);
      T *dgp = dg.data_ptr<T>(), *dup = du.data_ptr<T>();
      const T *dp = d.data_ptr<T>(), *gp = g.data_ptr<T>(), *up = u.data_ptr<T>();
      at::parallel_for(0, g.numel(), kGrain,
                       [&](int64_t i0, int64_t i1) { backward_avx2(dgp, dup, dp, gp, up, i0, i1); });
    });
    return {dg, du};
  }
};

bool kernel_applies(const at::Tensor& g, const at::Tensor& u) {
  const auto dtype = g.scalar_type();
  return core::cpu_features().avx2 && g.device().is_cpu() && u.device().is_cpu() && u.scalar_type() == dtype &&
         (dtype == at::kFloat || dtype == at::kBFloat16) && g.sizes().equals(u.sizes()) && g.is_contiguous() &&
         u.is_contiguous();
}

}  // namespace

at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up) {
  if (!kernel_applies(gate, up)) return at::silu(gate) * up;
  if (at::GradMode::is_enabled() && (gate.requires_grad() || up.requires_grad())) return SwigluFn::apply(gate, up);
  return forward_cpu(gate, up);
}

}  // namespace roll::model
