#include "roll/engine/avx2_common.h"
#include "roll/engine/cpu_kernels.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "roll/core/avx2_vec.h"
#include "roll/core/cpu_features.h"

namespace roll::engine::kernels {

namespace {

inline float load1(const float* p) { return *p; }
inline float load1(const uint16_t* p) { return widen_bf16(*p); }

template <typename T>
float dot_ref(const float* a, const T* b, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * load1(b + i);
  return s;
}

template <typename T>
void axpy_ref(float* y, float a, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * load1(x + i);
}

template <typename T>
void matmul_ref(const float* x, int64_t M, int64_t K, const T* w, int64_t n0, int64_t n1, float* y, int64_t ldy) {
  for (int64_t j = n0; j < n1; ++j)
    for (int64_t m = 0; m < M; ++m) y[m * ldy + j] = dot_ref(x + m * K, w + j * K, K);
}

#define AVX2 __attribute__((target("avx2,fma")))

AVX2 inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
AVX2 inline __m256 load8(const uint16_t* p) { return core::avx2::load8_bf16(p); }
using core::avx2::exp8;

template <typename T>
AVX2 float dot_avx2(const float* a, const T* b, int64_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), load8(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), load8(b + i + 8), s1);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), load8(b + i), s0);
  float s = hsum(_mm256_add_ps(s0, s1));
  for (; i < n; ++i) s += a[i] * load1(b + i);
  return s;
}

template <typename T>
AVX2 void axpy_avx2(float* y, float a, const T* x, int64_t n) {
  const __m256 av = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, load8(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * load1(x + i);
}

constexpr int kWeightPrefetchBytes = 1024;

// One weight row against MB rows of x, two accumulation chains per x row (MB = 1 uses four).
// Weight rows are walked one after another, so the weights stream through memory front to back:
// hardware prefetchers follow one long stream far better than many short interleaved ones.
template <int MB, typename T>
AVX2 void row_avx2(const float* x, int64_t K, const T* wr, float* y, int64_t ldy) {
  constexpr int C = MB == 1 ? 4 : 2;  // chains per x row
  __m256 acc[MB][C];
#pragma GCC unroll 8
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) acc[m][c] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 * C <= K; k += 8 * C) {
    // Software prefetch 1 KB ahead of the weight stream: on Zen 3 it raised the batch-1 read rate
    // from 32-35 to 36-40 GB/s (the hardware prefetcher alone keeps too few lines in flight).
#pragma GCC unroll 4
    for (int b = 0; b < static_cast<int>(8 * C * sizeof(T)); b += 64)
      _mm_prefetch(reinterpret_cast<const char*>(wr + k) + kWeightPrefetchBytes + b, _MM_HINT_T0);
    __m256 wv[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) wv[c] = load8(wr + k + 8 * c);
#pragma GCC unroll 8
    for (int m = 0; m < MB; ++m)
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) acc[m][c] = _mm256_fmadd_ps(wv[c], _mm256_loadu_ps(x + m * K + k + 8 * c), acc[m][c]);
  }
  for (; k + 8 <= K; k += 8) {
    const __m256 wv = load8(wr + k);
#pragma GCC unroll 8
    for (int m = 0; m < MB; ++m) acc[m][0] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + m * K + k), acc[m][0]);
  }
#pragma GCC unroll 8
  for (int m = 0; m < MB; ++m) {
    __m256 t = acc[m][0];
#pragma GCC unroll 4
    for (int c = 1; c < C; ++c) t = _mm256_add_ps(t, acc[m][c]);
    float s = hsum(t);
    for (int64_t kk = k; kk < K; ++kk) s += x[m * K + kk] * load1(wr + kk);
    y[m * ldy] = s;
  }
}

template <int MB, typename T>
AVX2 void rows_avx2(const float* x, int64_t K, const T* w, int64_t n0, int64_t n1, float* y, int64_t ldy) {
  for (int64_t j = n0; j < n1; ++j) row_avx2<MB>(x, K, w + j * K, y + j, ldy);
}

template <typename T>
AVX2 void matmul_avx2(const float* x, int64_t M, int64_t K, const T* w, int64_t n0, int64_t n1, float* y,
                      int64_t ldy) {
  int64_t m = 0;
  for (; m + 4 <= M; m += 4) rows_avx2<4>(x + m * K, K, w, n0, n1, y + m * ldy, ldy);
  switch (M - m) {
    case 3: rows_avx2<3>(x + m * K, K, w, n0, n1, y + m * ldy, ldy); break;
    case 2: rows_avx2<2>(x + m * K, K, w, n0, n1, y + m * ldy, ldy); break;
    case 1: rows_avx2<1>(x + m * K, K, w, n0, n1, y + m * ldy, ldy); break;
    default: break;
  }
}

// Eight horizontal sums at once: lane i of the result is the sum of the lanes of v[i].
AVX2 inline __m256 hsum8(const __m256* v) {
  const __m256 a = _mm256_hadd_ps(v[0], v[1]), b = _mm256_hadd_ps(v[2], v[3]);
  const __m256 c = _mm256_hadd_ps(v[4], v[5]), d = _mm256_hadd_ps(v[6], v[7]);
  const __m256 ab = _mm256_hadd_ps(a, b), cd = _mm256_hadd_ps(c, d);
  // ab = [s0 s1 s2 s3 | s0' s1' s2' s3'] (low and high 128-bit halves of rows 0-3), same for cd.
  const __m256 lo = _mm256_permute2f128_ps(ab, cd, 0x20), hi = _mm256_permute2f128_ps(ab, cd, 0x31);
  return _mm256_add_ps(lo, hi);
}

template <typename T>
AVX2 void dots_avx2(const float* q, const T* k, int64_t stride, int64_t n, int64_t D, float* scores) {
  int64_t t = 0;
  if (D % 8 == 0) {
    for (; t + 8 <= n; t += 8) {
      __m256 acc[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) acc[i] = _mm256_setzero_ps();
      for (int64_t d = 0; d < D; d += 8) {
        const __m256 qv = _mm256_loadu_ps(q + d);
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) acc[i] = _mm256_fmadd_ps(qv, load8(k + (t + i) * stride + d), acc[i]);
      }
      _mm256_storeu_ps(scores + t, hsum8(acc));
    }
  }
  for (; t < n; ++t) scores[t] = dot_avx2(q, k + t * stride, D);
}

template <typename T>
AVX2 void weighted_sum_avx2(float* acc, const float* p, const T* v, int64_t stride, int64_t n, int64_t D) {
  int64_t d0 = 0;
  for (; d0 + 64 <= D; d0 += 64) {  // 64 columns: eight accumulators in registers over all rows
    __m256 a[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) a[i] = _mm256_loadu_ps(acc + d0 + 8 * i);
    for (int64_t t = 0; t < n; ++t) {
      const __m256 pt = _mm256_set1_ps(p[t]);
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) a[i] = _mm256_fmadd_ps(pt, load8(v + t * stride + d0 + 8 * i), a[i]);
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) _mm256_storeu_ps(acc + d0 + 8 * i, a[i]);
  }
  if (d0 < D)
    for (int64_t t = 0; t < n; ++t) axpy_avx2(acc + d0, p[t], v + t * stride + d0, D - d0);
}

AVX2 void bf16_to_float_avx2(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load8(src + i));
  for (; i < n; ++i) dst[i] = widen_bf16(src[i]);
}

const bool kAvx2 = core::cpu_features().avx2;

AVX2 float max_avx2(const float* x, int64_t n) {
  __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + i));
    m1 = _mm256_max_ps(m1, _mm256_loadu_ps(x + i + 8));
  }
  float out[8];
  _mm256_storeu_ps(out, _mm256_max_ps(m0, m1));
  float m = *std::max_element(out, out + 8);
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

AVX2 double sum_exp_avx2(const float* x, int64_t n, float shift, float scale, float* out) {
  const __m256 sh = _mm256_set1_ps(shift), sc = _mm256_set1_ps(scale);
  __m256d a0 = _mm256_setzero_pd(), a1 = a0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp8(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), sh), sc));
    if (out) _mm256_storeu_ps(out + i, e);
    a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  double lanes[4];
  _mm256_storeu_pd(lanes, _mm256_add_pd(a0, a1));
  double s = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  for (; i < n; ++i) {
    const float e = std::exp((x[i] - shift) * scale);
    if (out) out[i] = e;
    s += e;
  }
  return s;
}

AVX2 int64_t first_above_avx2(const float* x, int64_t i, int64_t n, float v) {
  const __m256 t = _mm256_set1_ps(v);
  for (; i + 16 <= n; i += 16) {
    const int lo = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), t, _CMP_GT_OQ));
    const int hi = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i + 8), t, _CMP_GT_OQ));
    if (const int m = lo | (hi << 8)) return i + __builtin_ctz(static_cast<unsigned>(m));
  }
  for (; i < n; ++i)
    if (x[i] > v) return i;
  return n;
}

AVX2 void silu_mul_avx2(float* g, const float* u, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(g + i);
    const __m256 sig = _mm256_div_ps(x, _mm256_add_ps(one, exp8(_mm256_sub_ps(zero, x))));
    _mm256_storeu_ps(g + i, _mm256_mul_ps(sig, _mm256_loadu_ps(u + i)));
  }
  for (; i < n; ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

}  // namespace

bool have_avx2() { return kAvx2; }

void silu_mul(float* gate, const float* up, int64_t n) {
  if (kAvx2) return silu_mul_avx2(gate, up, n);
  for (int64_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

float dot(const float* a, const float* b, int64_t n) { return kAvx2 ? dot_avx2(a, b, n) : dot_ref(a, b, n); }
float dot(const float* a, const uint16_t* b, int64_t n) { return kAvx2 ? dot_avx2(a, b, n) : dot_ref(a, b, n); }
void axpy(float* y, float a, const float* x, int64_t n) { kAvx2 ? axpy_avx2(y, a, x, n) : axpy_ref(y, a, x, n); }
void axpy(float* y, float a, const uint16_t* x, int64_t n) { kAvx2 ? axpy_avx2(y, a, x, n) : axpy_ref(y, a, x, n); }

void dots(const float* q, const float* k, int64_t stride, int64_t n, int64_t D, float* scores) {
  if (kAvx2) return dots_avx2(q, k, stride, n, D, scores);
  for (int64_t t = 0; t < n; ++t) scores[t] = dot_ref(q, k + t * stride, D);
}
void dots(const float* q, const uint16_t* k, int64_t stride, int64_t n, int64_t D, float* scores) {
  if (kAvx2) return dots_avx2(q, k, stride, n, D, scores);
  for (int64_t t = 0; t < n; ++t) scores[t] = dot_ref(q, k + t * stride, D);
}
void weighted_sum(float* acc, const float* p, const float* v, int64_t stride, int64_t n, int64_t D) {
  if (kAvx2) return weighted_sum_avx2(acc, p, v, stride, n, D);
  for (int64_t t = 0; t < n; ++t) axpy_ref(acc, p[t], v + t * stride, D);
}
void weighted_sum(float* acc, const float* p, const uint16_t* v, int64_t stride, int64_t n, int64_t D) {
  if (kAvx2) return weighted_sum_avx2(acc, p, v, stride, n, D);
  for (int64_t t = 0; t < n; ++t) axpy_ref(acc, p[t], v + t * stride, D);
}

void bf16_to_float(const uint16_t* src, float* dst, int64_t n) {
  if (kAvx2) return bf16_to_float_avx2(src, dst, n);
  for (int64_t i = 0; i < n; ++i) dst[i] = widen_bf16(src[i]);
}

float max_of(const float* x, int64_t n) { return kAvx2 ? max_avx2(x, n) : *std::max_element(x, x + n); }

int64_t argmax_of(const float* x, int64_t n) {
  const float m = max_of(x, n);
  for (int64_t i = 0; i < n; ++i)
    if (x[i] == m) return i;
  return std::max_element(x, x + n) - x;  // NaN rows
}

int64_t first_above(const float* x, int64_t i0, int64_t i1, float v) {
  if (kAvx2) return first_above_avx2(x, i0, i1, v);
  for (int64_t i = i0; i < i1; ++i)
    if (x[i] > v) return i;
  return i1;
}

double sum_exp(const float* x, int64_t n, float shift, float scale, float* out) {
  if (kAvx2) return sum_exp_avx2(x, n, shift, scale, out);
  double s = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float e = std::exp((x[i] - shift) * scale);
    if (out) out[i] = e;
    s += e;
  }
  return s;
}

void matmul_wt(const float* x, int64_t M, int64_t K, const float* w, int64_t n0, int64_t n1, float* y, int64_t ldy) {
  kAvx2 ? matmul_avx2(x, M, K, w, n0, n1, y, ldy) : matmul_ref(x, M, K, w, n0, n1, y, ldy);
}

void matmul_wt(const float* x, int64_t M, int64_t K, const uint16_t* w, int64_t n0, int64_t n1, float* y,
               int64_t ldy) {
  kAvx2 ? matmul_avx2(x, M, K, w, n0, n1, y, ldy) : matmul_ref(x, M, K, w, n0, n1, y, ldy);
}

}  // namespace roll::engine::kernels
