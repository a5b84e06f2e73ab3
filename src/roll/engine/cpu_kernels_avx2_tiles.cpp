// The bf16 matrix product for batches of rows on AVX2 without bf16 instructions (cpu_kernels.h).
// Widening bf16 to fp32 costs vector ALU operations that compete with the FMAs, so the kernel
// pays as little of it as it can: a 32-byte load of 16 weights holds, in each 32-bit lane, one
// even and one odd element; shifting the lane up by 16 bits gives the even one as fp32 and
// masking its low half gives the odd one, two operations for 16 weights and no shuffles. x is
// split once per call so that each block of 16 k holds its 8 even elements then its 8 odd ones,
// which is the order the widened weights come in. A tile keeps 3 weight rows against 4 rows of x
// in 12 accumulators (a dot product per output, summed horizontally at the end); the weights of
// a group of tiles stay in L1 while every row of x passes them. The engine calls it for small
// batches (up to 24 rows), whose rows of x all sit in L1/L2 together.
#include <immintrin.h>

#include <algorithm>

#include "roll/engine/avx2_common.h"
#include "roll/engine/cpu_kernels.h"

namespace roll::engine::kernels {
namespace {

#define AVX2 __attribute__((target("avx2,fma")))

constexpr int64_t kGroup = 6;                  // weight rows kept in L1 while the rows of x pass
constexpr int64_t kPrefetchRows = 2 * kGroup;  // how far ahead the weights are prefetched

// Element k of a split row (the inverse of split_x_even_odd's placement).
inline float split_at(const float* xs, int64_t k) {
  const int64_t j = k % 16;
  return xs[k - j + (j % 2 == 0 ? j / 2 : 8 + j / 2)];
}

// y[m * ldy + r] = x_m . w_r for RW weight rows (ldw apart) and RM split rows of x (ldx apart).
template <int RW, int RM>
AVX2 void tile(const float* xs, int64_t ldx, int64_t K, const uint16_t* w, int64_t ldw, float* y, int64_t ldy) {
  __m256 acc[RW][RM];
#pragma GCC unroll 3
  for (int r = 0; r < RW; ++r)
#pragma GCC unroll 4
    for (int m = 0; m < RM; ++m) acc[r][m] = _mm256_setzero_ps();
  const __m256i odd_mask = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
#pragma GCC unroll 3
    for (int r = 0; r < RW; ++r) {
      // The same k two groups of rows on: a group's rows are read side by side and would each
      // start cold (8 rows of x in isolation on Zen 3: 119-122 GFLOP/s against 112 prefetching
      // 1 KB further along the same rows at K = 4864, 112-118 against 84-89 at K = 896).
      _mm_prefetch(reinterpret_cast<const char*>(w + (r + kPrefetchRows) * ldw + k), _MM_HINT_T0);
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + r * ldw + k));
      const __m256 even = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
      const __m256 odd = _mm256_castsi256_ps(_mm256_and_si256(v, odd_mask));
#pragma GCC unroll 4
      for (int m = 0; m < RM; ++m) {
        acc[r][m] = _mm256_fmadd_ps(even, _mm256_loadu_ps(xs + m * ldx + k), acc[r][m]);
        acc[r][m] = _mm256_fmadd_ps(odd, _mm256_loadu_ps(xs + m * ldx + k + 8), acc[r][m]);
      }
    }
  }
#pragma GCC unroll 3
  for (int r = 0; r < RW; ++r)
#pragma GCC unroll 4
    for (int m = 0; m < RM; ++m) {
      float s = hsum(acc[r][m]);
      for (int64_t kk = k; kk < K; ++kk) s += split_at(xs + m * ldx, kk) * widen_bf16(w[r * ldw + kk]);
      y[m * ldy + r] = s;
    }
}

template <int RW>
AVX2 void tile_rows(int RM, const float* xs, int64_t ldx, int64_t K, const uint16_t* w, float* y, int64_t ldy) {
  switch (RM) {
    case 4: tile<RW, 4>(xs, ldx, K, w, K, y, ldy); break;
    case 3: tile<RW, 3>(xs, ldx, K, w, K, y, ldy); break;
    case 2: tile<RW, 2>(xs, ldx, K, w, K, y, ldy); break;
    default: tile<RW, 1>(xs, ldx, K, w, K, y, ldy); break;
  }
}

}  // namespace

int64_t x_split_stride(int64_t K) { return (K + 15) / 16 * 16; }

void split_x_even_odd(const float* x, int64_t M, int64_t K, float* xs) {
  const int64_t ld = x_split_stride(K);
  for (int64_t m = 0; m < M; ++m) {
    const float* xr = x + m * K;
    float* out = xs + m * ld;
    for (int64_t b = 0; b < ld; b += 16)
      for (int64_t j = 0; j < 8; ++j) {
        out[b + j] = b + 2 * j < K ? xr[b + 2 * j] : 0.0f;
        out[b + 8 + j] = b + 2 * j + 1 < K ? xr[b + 2 * j + 1] : 0.0f;
      }
  }
}

void matmul_wt_split(const float* xs, int64_t M, int64_t K, const uint16_t* w, int64_t n0, int64_t n1, float* y,
                     int64_t ldy) {
  // Groups of 6 weight rows (10.5 KB at K = 896) stay in L1 while the rows of x pass them.
  constexpr int64_t kRW = 3, kRM = 4;
  const int64_t ldx = x_split_stride(K);
  for (int64_t g = n0; g < n1; g += kGroup) {
    const int64_t gend = std::min(n1, g + kGroup);
    for (int64_t m = 0; m < M; m += kRM) {
      const int rm = static_cast<int>(std::min(kRM, M - m));
      for (int64_t r = g; r < gend; r += kRW) {
        const uint16_t* wr = w + r * K;
        float* yr = y + m * ldy + r;
        switch (std::min(kRW, gend - r)) {
          case 3: tile_rows<3>(rm, xs + m * ldx, ldx, K, wr, yr, ldy); break;
          case 2: tile_rows<2>(rm, xs + m * ldx, ldx, K, wr, yr, ldy); break;
          default: tile_rows<1>(rm, xs + m * ldx, ldx, K, wr, yr, ldy); break;
        }
      }
    }
  }
}

}  // namespace roll::engine::kernels
