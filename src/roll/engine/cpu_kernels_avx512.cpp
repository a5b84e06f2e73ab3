// The small-M fp32 matrix product on AVX-512 (cpu_kernels.h), the fp32 counterpart of
// cpu_kernels_dpbf16.cpp: one weight row at a time against up to 4 rows of x that fit in L1
// beside it (the weights one stream through memory), else tiles of 4 weight rows x up to 6 rows
// of x in 24 accumulators, prefetching the next groups of rows.
#include <immintrin.h>

#include <algorithm>

#include "roll/engine/avx512_sum.h"
#include "roll/engine/cpu_kernels.h"

namespace roll::engine::kernels {
namespace {

#define AVX512 __attribute__((target("avx512f,avx512dq")))

// y[m * ldy + r] = x_m . w_r for MT rows of x and R (1 or 4) consecutive weight rows; `ahead`
// (elements, 0 for none) prefetches the rows that far on.
template <int MT, int R>
AVX512 void tile(const float* x, int64_t K, const float* w, float* y, int64_t ldy, int64_t ahead) {
  __m512 acc[MT][R];
#pragma GCC unroll 6
  for (int m = 0; m < MT; ++m)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[m][r] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    __m512 wv[R];
    if (ahead)
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) _mm_prefetch(reinterpret_cast<const char*>(w + ahead + r * K + k), _MM_HINT_T0);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) wv[r] = _mm512_loadu_ps(w + r * K + k);
#pragma GCC unroll 6
    for (int m = 0; m < MT; ++m) {
      const __m512 xv = _mm512_loadu_ps(x + m * K + k);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[m][r] = _mm512_fmadd_ps(xv, wv[r], acc[m][r]);
    }
  }
  if (k < K) {  // tails under a mask: past them lie the next row, or nothing
    const __mmask16 mask = static_cast<__mmask16>((1u << (K - k)) - 1);
    __m512 wv[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) wv[r] = _mm512_maskz_loadu_ps(mask, w + r * K + k);
#pragma GCC unroll 6
    for (int m = 0; m < MT; ++m) {
      const __m512 xv = _mm512_maskz_loadu_ps(mask, x + m * K + k);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[m][r] = _mm512_fmadd_ps(xv, wv[r], acc[m][r]);
    }
  }
#pragma GCC unroll 6
  for (int m = 0; m < MT; ++m) {
    if constexpr (R == 4) {
      _mm_storeu_ps(y + m * ldy, hsum4(acc[m][0], acc[m][1], acc[m][2], acc[m][3]));
    } else {
      y[m * ldy] = _mm512_reduce_add_ps(acc[m][0]);
    }
  }
}

template <int R>
AVX512 void tile_rows(int64_t mt, const float* x, int64_t K, const float* w, float* y, int64_t ldy, int64_t ahead) {
  switch (mt) {
    case 1: tile<1, R>(x, K, w, y, ldy, ahead); break;
    case 2: tile<2, R>(x, K, w, y, ldy, ahead); break;
    case 3: tile<3, R>(x, K, w, y, ldy, ahead); break;
    case 4: tile<4, R>(x, K, w, y, ldy, ahead); break;
    case 5: tile<5, R>(x, K, w, y, ldy, ahead); break;
    default: tile<6, R>(x, K, w, y, ldy, ahead); break;
  }
}

AVX512 void matmul(const float* x, int64_t M, int64_t K, const float* w, int64_t n0, int64_t n1, float* y,
                   int64_t ldy) {
  if (M <= 0) return;
  if (M <= 4 && M * K * 4 <= (16 << 10)) {  // one weight row at a time: one stream
    for (int64_t j = n0; j < n1; ++j) tile_rows<1>(M, x, K, w + j * K, y + j, ldy, 0);
    return;
  }
  const int64_t tiles = (M + 5) / 6, per = (M + tiles - 1) / tiles;
  const int64_t group = 4 * K, ahead = std::max<int64_t>(1, (16 << 10) / (4 * group)) * group;
  int64_t j = n0;
  for (; j + 4 <= n1; j += 4)
    for (int64_t m0 = 0; m0 < M; m0 += per)
      tile_rows<4>(std::min(per, M - m0), x + m0 * K, K, w + j * K, y + m0 * ldy + j, ldy,
                   m0 == 0 && j + 8 <= n1 ? ahead : 0);
  for (; j < n1; ++j)
    for (int64_t m0 = 0; m0 < M; m0 += per)
      tile_rows<1>(std::min(per, M - m0), x + m0 * K, K, w + j * K, y + m0 * ldy + j, ldy, 0);
}

}  // namespace

void matmul_wt_avx512(const float* x, int64_t M, int64_t K, const float* w, int64_t n0, int64_t n1, float* y,
                      int64_t ldy) {
  matmul(x, M, K, w, n0, n1, y, ldy);
}

}  // namespace roll::engine::kernels
