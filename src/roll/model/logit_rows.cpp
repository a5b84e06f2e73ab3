#include "roll/model/logit_rows.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "roll/core/avx2_vec.h"
#include "roll/core/cpu_features.h"

namespace roll::model {
namespace {

namespace v8 = core::avx2;

using v8::widen_bf16;

ROLL_AVX2 float row_max(const uint16_t* z, int64_t n) {
  __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0;
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    m0 = _mm256_max_ps(m0, v8::load8_bf16(z + j));
    m1 = _mm256_max_ps(m1, v8::load8_bf16(z + j + 8));
  }
  float lanes[8];
  _mm256_storeu_ps(lanes, _mm256_max_ps(m0, m1));
  float m = *std::max_element(lanes, lanes + 8);
  for (; j < n; ++j) m = std::max(m, widen_bf16(z[j]));
  return m;
}

ROLL_AVX2 inline __m256d add_wide(__m256d acc, __m256 v) {
  return _mm256_add_pd(_mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_castps256_ps128(v))),
                       _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

ROLL_AVX2 inline double hsum(__m256d v) {
  double lanes[4];
  _mm256_storeu_pd(lanes, v);
  return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}

// Σ exp(z - m) and, when `with_z`, Σ exp(z - m) (z - m).
ROLL_AVX2 void row_sums(const uint16_t* z, int64_t n, float m, bool with_z, double& sum, double& sum_z) {
  const __m256 mv = _mm256_set1_ps(m);
  __m256d s = _mm256_setzero_pd(), sz = _mm256_setzero_pd();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 d = _mm256_sub_ps(v8::load8_bf16(z + j), mv);
    const __m256 e = v8::exp8(d);
    s = add_wide(s, e);
    if (with_z) sz = add_wide(sz, _mm256_mul_ps(e, d));
  }
  sum = hsum(s);
  sum_z = hsum(sz);
  for (; j < n; ++j) {
    const float d = widen_bf16(z[j]) - m, e = std::exp(d);
    sum += e;
    sum_z += static_cast<double>(e) * d;
  }
}

// grad = -a p - b p (z - shift) with p = exp(z - lse); shift = lse - H (so z - shift = z - lse + H).
ROLL_AVX2 void row_grad(const uint16_t* z, int64_t n, float lse, float a, float b, float shift, uint16_t* g) {
  const __m256 lv = _mm256_set1_ps(lse), av = _mm256_set1_ps(-a), bv = _mm256_set1_ps(-b),
               sv = _mm256_set1_ps(shift);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 zv = v8::load8_bf16(z + j);
    const __m256 p = v8::exp8(_mm256_sub_ps(zv, lv));
    const __m256 coef = _mm256_fmadd_ps(bv, _mm256_sub_ps(zv, sv), av);  // -a - b (z - shift)
    v8::store8_bf16(g + j, _mm256_mul_ps(p, coef));
  }
  for (; j < n; ++j) {
    const float zj = widen_bf16(z[j]), p = std::exp(zj - lse);
    const float v = p * (-a - b * (zj - shift));
    g[j] = c10::BFloat16(v).x;
  }
}

const uint16_t* row_of(const at::Tensor& t, int64_t r) {
  return reinterpret_cast<const uint16_t*>(t.data_ptr<c10::BFloat16>()) + r * t.size(1);
}

}  // namespace

bool logit_rows_apply(const at::Tensor& hidden, const at::Tensor& weight) {
  return core::cpu_features().avx2 && hidden.device().is_cpu() && weight.device().is_cpu() &&
         hidden.scalar_type() == at::kBFloat16 && weight.scalar_type() == at::kBFloat16;
}

void logit_rows_forward(const at::Tensor& logits, const at::Tensor& targets, const at::Tensor& lse,
                        const at::Tensor& logp, const at::Tensor& entropy) {
  TORCH_CHECK(logits.is_contiguous() && logits.scalar_type() == at::kBFloat16, "logit_rows: bf16 rows in a row");
  const int64_t rows = logits.size(0), n = logits.size(1);
  const at::Tensor tgt = targets.contiguous();
  const int64_t* t = tgt.data_ptr<int64_t>();
  float* lse_p = lse.data_ptr<float>();
  float* logp_p = logp.data_ptr<float>();
  float* ent_p = entropy.defined() ? entropy.data_ptr<float>() : nullptr;
  at::parallel_for(0, rows, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const uint16_t* z = row_of(logits, r);
      const float m = row_max(z, n);
      double sum = 0, sum_z = 0;
      row_sums(z, n, m, ent_p != nullptr, sum, sum_z);
      const double l = static_cast<double>(m) + std::log(sum);
      lse_p[r] = static_cast<float>(l);
      logp_p[r] = static_cast<float>(static_cast<double>(widen_bf16(z[t[r]])) - l);
      // H = lse - Σ p z = log Σ e^(z-m) - Σ e^(z-m) (z-m) / Σ e^(z-m).
      if (ent_p) ent_p[r] = static_cast<float>(std::log(sum) - sum_z / sum);
    }
  });
}

void logit_rows_backward(const at::Tensor& logits, const at::Tensor& targets, const at::Tensor& lse,
                         const at::Tensor& entropy, const at::Tensor& g_logp, const at::Tensor& g_ent,
                         const at::Tensor& grad) {
  TORCH_CHECK(logits.is_contiguous() && grad.is_contiguous(), "logit_rows: bf16 rows in a row");
  const int64_t rows = logits.size(0), n = logits.size(1);
  const at::Tensor tgt = targets.contiguous();
  const int64_t* t = tgt.data_ptr<int64_t>();
  const float* lse_p = lse.data_ptr<float>();
  const float* gl = g_logp.defined() ? g_logp.data_ptr<float>() : nullptr;
  const float* ge = g_ent.defined() ? g_ent.data_ptr<float>() : nullptr;
  const float* ent_p = ge ? entropy.data_ptr<float>() : nullptr;
  uint16_t* g = reinterpret_cast<uint16_t*>(grad.data_ptr<c10::BFloat16>());
  at::parallel_for(0, rows, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const uint16_t* z = row_of(logits, r);
      const float a = gl ? gl[r] : 0.0f, b = ge ? ge[r] : 0.0f;
      const float shift = ge ? lse_p[r] - ent_p[r] : 0.0f;
      uint16_t* gr = g + r * n;
      row_grad(z, n, lse_p[r], a, b, shift, gr);
      if (gl) {  // the target's own term, formed once in fp32 and rounded once
        const float zt = widen_bf16(z[t[r]]), p = std::exp(zt - lse_p[r]);
        gr[t[r]] = c10::BFloat16(a * (1.0f - p) - b * p * (zt - shift)).x;
      }
    }
  });
}

}  // namespace roll::model
