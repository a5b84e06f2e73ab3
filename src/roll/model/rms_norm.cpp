#include "roll/model/rms_norm.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "roll/core/avx2_vec.h"
#include "roll/core/cpu_features.h"

namespace roll::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
namespace v8 = core::avx2;

using v8::load8;
using v8::store8;

// The value as the dtype holds it: bf16 rounds (nearest, ties to even), fp32 is itself.
ROLL_AVX2 inline __m256 as_dtype(__m256 v, float) { return v; }
ROLL_AVX2 inline __m256 as_dtype(__m256 v, c10::BFloat16) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(v8::round_to_bf16_bits(v), 16));
}
inline float as_dtype(float v, float) { return v; }
inline float as_dtype(float v, c10::BFloat16) { return static_cast<float>(c10::BFloat16(v)); }

using v8::hsum;

// Σ a_j b_j over a row, in fp32.
template <typename A, typename B>
ROLL_AVX2 float row_dot(const A* a, const B* b, int64_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0;
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    s0 = _mm256_fmadd_ps(load8(a + j), load8(b + j), s0);
    s1 = _mm256_fmadd_ps(load8(a + j + 8), load8(b + j + 8), s1);
  }
  for (; j + 8 <= n; j += 8) s0 = _mm256_fmadd_ps(load8(a + j), load8(b + j), s0);
  float s = hsum(_mm256_add_ps(s0, s1));
  for (; j < n; ++j) s += static_cast<float>(a[j]) * static_cast<float>(b[j]);
  return s;
}

// y = w · as_dtype(x · r), r = rsqrt(mean(x²) + eps), rows [r0, r1).
template <typename T>
ROLL_AVX2 void forward_rows(const T* x, const T* w, T* y, float* rstd, int64_t n, float eps, int64_t r0,
                            int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    const float rs = 1.0f / std::sqrt(row_dot(xr, xr, n) / static_cast<float>(n) + eps);
    rstd[r] = rs;
    const __m256 rv = _mm256_set1_ps(rs);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) store8(yr + j, _mm256_mul_ps(load8(w + j), as_dtype(_mm256_mul_ps(load8(xr + j), rv), T())));
    for (; j < n; ++j)
      yr[j] = static_cast<T>(static_cast<float>(w[j]) * as_dtype(static_cast<float>(xr[j]) * rs, T()));
  }
}

// Rows [r0, r1) of the backward: dn = as_dtype(dy · w); dx = as_dtype(r dn − (r³/n) x Σ dn x);
// dw (fp32 [n], this task's share) += dy · as_dtype(x r).
template <typename T>
ROLL_AVX2 void backward_rows(const T* x, const T* w, const T* dy, const float* rstd, T* dx, float* dw, int64_t n,
                             int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const T *xr = x + r * n, *dyr = dy + r * n;
    const float rs = rstd[r];
    const __m256 rv = _mm256_set1_ps(rs);
    if (dx) {
      // Σ dn x with dn as the dtype rounds dy · w.
      __m256 s = _mm256_setzero_ps();
      int64_t j = 0;
      for (; j + 8 <= n; j += 8)
        s = _mm256_fmadd_ps(as_dtype(_mm256_mul_ps(load8(dyr + j), load8(w + j)), T()), load8(xr + j), s);
      float dot = hsum(s);
      for (; j < n; ++j)
        dot += as_dtype(static_cast<float>(dyr[j]) * static_cast<float>(w[j]), T()) * static_cast<float>(xr[j]);
      const float c = -rs * rs * rs * dot / static_cast<float>(n);
      const __m256 cv = _mm256_set1_ps(c);
      T* dxr = dx + r * n;
      for (j = 0; j + 8 <= n; j += 8) {
        const __m256 dn = as_dtype(_mm256_mul_ps(load8(dyr + j), load8(w + j)), T());
        store8(dxr + j, _mm256_fmadd_ps(cv, load8(xr + j), _mm256_mul_ps(rv, dn)));
      }
      for (; j < n; ++j) {
        const float dn = as_dtype(static_cast<float>(dyr[j]) * static_cast<float>(w[j]), T());
        dxr[j] = static_cast<T>(c * static_cast<float>(xr[j]) + rs * dn);
      }
    }
    if (dw) {
      int64_t j = 0;
      for (; j + 8 <= n; j += 8) {
        const __m256 nrm = as_dtype(_mm256_mul_ps(load8(xr + j), rv), T());
        _mm256_storeu_ps(dw + j, _mm256_fmadd_ps(load8(dyr + j), nrm, _mm256_loadu_ps(dw + j)));
      }
      for (; j < n; ++j) dw[j] += static_cast<float>(dyr[j]) * as_dtype(static_cast<float>(xr[j]) * rs, T());
    }
  }
}

std::pair<at::Tensor, at::Tensor> forward_cpu(const at::Tensor& x, const at::Tensor& w, double eps) {
  const int64_t n = x.size(-1), rows = x.numel() / std::max<int64_t>(n, 1);
  at::Tensor y = at::empty_like(x), rstd = at::empty({rows}, x.options().dtype(at::kFloat));
  core::with_float_or_bf16(x.scalar_type() == at::kBFloat16, [&](auto zero) {
    using T = decltype(zero);
    const T *xp = x.data_ptr<T>(), *wp = w.data_ptr<T>();
    T* yp = y.data_ptr<T>();
    float* rp = rstd.data_ptr<float>();
    at::parallel_for(0, rows, 16, [&](int64_t r0, int64_t r1) {
      forward_rows(xp, wp, yp, rp, n, static_cast<float>(eps), r0, r1);
    });
  });
  return {y, rstd};
}

struct RmsNormFn : public torch::autograd::Function<RmsNormFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w, double eps) {
    auto [y, rstd] = forward_cpu(x, w, eps);
    ctx->save_for_backward({x, w, rstd});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &w = saved[1], &rstd = saved[2];
    const at::Tensor dy = grads[0].to(x.scalar_type()).contiguous();
    const int64_t n = x.size(-1), rows = rstd.numel();
    const bool want_dx = ctx->needs_input_grad(0), want_dw = ctx->needs_input_grad(1);
    at::Tensor dx = want_dx ? at::empty_like(x) : at::Tensor();
    // dw: one fp32 partial per task, summed after (rows split evenly over the threads).
    const int64_t tasks = want_dw ? std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), rows)) : 1;
    at::Tensor partial = want_dw ? at::zeros({tasks, n}, x.options().dtype(at::kFloat)) : at::Tensor();
    core::with_float_or_bf16(x.scalar_type() == at::kBFloat16, [&](auto zero) {
      using T = decltype(zero);
      const T *xp = x.data_ptr<T>(), *wp = w.data_ptr<T>(), *dyp = dy.data_ptr<T>();
      T* dxp = want_dx ? dx.data_ptr<T>() : nullptr;
      const float* rp = rstd.data_ptr<float>();
      float* pp = want_dw ? partial.data_ptr<float>() : nullptr;
      const int64_t per = (rows + tasks - 1) / tasks;
      at::parallel_for(0, tasks, 1, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t)
          backward_rows(xp, wp, dyp, rp, dxp, pp ? pp + t * n : nullptr, n, t * per, std::min(rows, (t + 1) * per));
      });
    });
    at::Tensor dw = want_dw ? partial.sum(0).to(w.scalar_type()) : at::Tensor();
    return {dx, dw, at::Tensor()};
  }
};

bool kernel_applies(const at::Tensor& x, const at::Tensor& w) {
  const auto dtype = x.scalar_type();
  return core::cpu_features().avx2 && x.device().is_cpu() && w.device().is_cpu() && w.scalar_type() == dtype &&
         (dtype == at::kFloat || dtype == at::kBFloat16) && x.dim() >= 1 && w.dim() == 1 &&
         w.size(0) == x.size(-1) && x.is_contiguous() && w.is_contiguous() && x.numel() > 0;
}

// HF's formula in ATen's operations.
at::Tensor rms_norm_aten(const at::Tensor& x, const at::Tensor& w, double eps) {
  at::Tensor xf = x.to(at::kFloat);
  at::Tensor var = xf.pow(2).mean(-1, /*keepdim=*/true);
  return w * (xf * at::rsqrt(var + eps)).to(x.scalar_type());
}

}  // namespace

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps) {
  if (!kernel_applies(x, w)) return rms_norm_aten(x, w, eps);
  if (at::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad())) return RmsNormFn::apply(x, w, eps);
  return forward_cpu(x, w, eps).first;
}

}  // namespace roll::model
