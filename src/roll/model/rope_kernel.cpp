#include "roll/model/rope_kernel.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cstdint>

#include "roll/core/avx2_vec.h"
#include "roll/core/cpu_features.h"

namespace roll::model {
namespace {

namespace v8 = core::avx2;
using v8::load8;
using v8::store8;

// Tokens [t0, t1) of `heads` heads of D values each.
template <typename T>
ROLL_AVX2 void rotate_rows(const T* x, const T* cos, const T* sin, T* y, int64_t heads, int64_t D, bool transpose,
                           int64_t t0, int64_t t1) {
  const int64_t half = D / 2;
  const int64_t vec = half / 8 * 8;
  for (int64_t t = t0; t < t1; ++t) {
    const T *c = cos + t * D, *s = sin + t * D;
    for (int64_t h = 0; h < heads; ++h) {
      const T* xr = x + (t * heads + h) * D;
      T* yr = y + (t * heads + h) * D;
      for (int64_t i = 0; i < vec; i += 8) {
        const __m256 x1 = load8(xr + i), x2 = load8(xr + half + i);
        const __m256 c1 = load8(c + i), c2 = load8(c + half + i), s1 = load8(s + i), s2 = load8(s + half + i);
        if (!transpose) {
          store8(yr + i, _mm256_fnmadd_ps(x2, s1, _mm256_mul_ps(x1, c1)));
          store8(yr + half + i, _mm256_fmadd_ps(x1, s2, _mm256_mul_ps(x2, c2)));
        } else {
          store8(yr + i, _mm256_fmadd_ps(x2, s2, _mm256_mul_ps(x1, c1)));
          store8(yr + half + i, _mm256_fnmadd_ps(x1, s1, _mm256_mul_ps(x2, c2)));
        }
      }
      for (int64_t i = vec; i < half; ++i) {
        const float x1 = static_cast<float>(xr[i]), x2 = static_cast<float>(xr[half + i]);
        const float c1 = static_cast<float>(c[i]), c2 = static_cast<float>(c[half + i]);
        const float s1 = static_cast<float>(s[i]), s2 = static_cast<float>(s[half + i]);
        yr[i] = static_cast<T>(transpose ? x1 * c1 + x2 * s2 : x1 * c1 - x2 * s1);
        yr[half + i] = static_cast<T>(transpose ? x2 * c2 - x1 * s1 : x2 * c2 + x1 * s2);
      }
    }
  }
}

}  // namespace

bool rope_kernel_applies(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const auto dtype = x.scalar_type();
  if (!core::cpu_features().avx2 || !x.device().is_cpu() || x.dim() < 2 || x.size(-1) % 2 != 0) return false;
  if (dtype != at::kFloat && dtype != at::kBFloat16) return false;
  if (cos.scalar_type() != dtype || sin.scalar_type() != dtype || !x.is_contiguous() || !cos.is_contiguous() ||
      !sin.is_contiguous())
    return false;
  auto table = x.sizes().vec();
  table[table.size() - 2] = 1;
  return cos.sizes().vec() == table && sin.sizes().vec() == table;
}

at::Tensor rope_cpu(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, bool transpose) {
  const int64_t D = x.size(-1), heads = x.size(-2), tokens = x.numel() / (heads * D);
  at::Tensor y = at::empty_like(x);
  core::with_float_or_bf16(x.scalar_type() == at::kBFloat16, [&](auto zero) {
    using T = decltype(zero);
    const T *xp = x.data_ptr<T>(), *cp = cos.data_ptr<T>(), *sp = sin.data_ptr<T>();
    T* yp = y.data_ptr<T>();
    at::parallel_for(0, tokens, 16, [&](int64_t t0, int64_t t1) {
      rotate_rows(xp, cp, sp, yp, heads, D, transpose, t0, t1);
    });
  });
  return y;
}

}  // namespace roll::model
