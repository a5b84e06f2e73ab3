// The small-M bf16 matrix product on AVX512-BF16 (cpu_kernels.h): vdpbf16ps multiplies pairs of
// bf16 values and adds both products into one fp32 lane, so the weights' rows are used as they
// are stored ([N, K] row-major, the checkpoint's layout) with no repacking. Each tile holds up to
// 6 rows of x against 4 weight rows in 24 accumulators: every weight vector loaded is used by all
// the tile's x rows, every x vector by 4 weight rows.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "roll/engine/avx512_sum.h"
#include "roll/engine/cpu_kernels.h"

namespace roll::engine::kernels {
namespace {

#define DPBF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))

DPBF16 inline __m512 dp(__m512 acc, __m512i x, __m512i w) {
  return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh&>(x), reinterpret_cast<__m512bh&>(w));
}

// y[m * ldy + r] = x_m . w_r for MT rows of x (stride xs, zero-padded to a multiple of 32) and
// R consecutive weight rows of length K. With `ahead` set, also prefetches the R rows at
// w + ahead as it goes: four rows at once are four streams through memory, more than the
// hardware prefetchers follow at full rate. The prefetches go to L2: into L1 they hold the few
// L1 miss buffers the tile's own loads need (Zen 4, 8 rows: 0.71-0.73 of oneDNN per layer with
// the L1 hint, 1.17-1.18 with L2's).
template <int MT, int R>
DPBF16 void tile(const uint16_t* x, int64_t xs, int64_t K, const uint16_t* w, float* y, int64_t ldy,
                 int64_t ahead) {
  __m512 acc[MT][R];
#pragma GCC unroll 6
  for (int m = 0; m < MT; ++m)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[m][r] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
    __m512i wv[R];
    if (ahead)
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) _mm_prefetch(reinterpret_cast<const char*>(w + ahead + r * K + k), _MM_HINT_T1);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) wv[r] = _mm512_loadu_si512(w + r * K + k);
#pragma GCC unroll 6
    for (int m = 0; m < MT; ++m) {
      const __m512i xv = _mm512_loadu_si512(x + m * xs + k);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[m][r] = dp(acc[m][r], xv, wv[r]);
    }
  }
  if (k < K) {  // the weights' tail is read under a mask (past it lies the next row, or nothing)
    const __mmask32 mask = (1u << (K - k)) - 1;
    __m512i wv[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) wv[r] = _mm512_maskz_loadu_epi16(mask, w + r * K + k);
#pragma GCC unroll 6
    for (int m = 0; m < MT; ++m) {
      const __m512i xv = _mm512_loadu_si512(x + m * xs + k);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[m][r] = dp(acc[m][r], xv, wv[r]);
    }
  }
#pragma GCC unroll 6
  for (int m = 0; m < MT; ++m) {
    if constexpr (R == 4)
      _mm_storeu_ps(y + m * ldy, hsum4(acc[m][0], acc[m][1], acc[m][2], acc[m][3]));
    else
      for (int r = 0; r < R; ++r) y[m * ldy + r] = _mm512_reduce_add_ps(acc[m][r]);
  }
}

template <int R>
DPBF16 void tile_rows(int64_t mt, const uint16_t* x, int64_t xs, int64_t K, const uint16_t* w, float* y,
                      int64_t ldy, int64_t ahead) {
  switch (mt) {
    case 1: tile<1, R>(x, xs, K, w, y, ldy, ahead); break;
    case 2: tile<2, R>(x, xs, K, w, y, ldy, ahead); break;
    case 3: tile<3, R>(x, xs, K, w, y, ldy, ahead); break;
    case 4: tile<4, R>(x, xs, K, w, y, ldy, ahead); break;
    case 5: tile<5, R>(x, xs, K, w, y, ldy, ahead); break;
    default: tile<6, R>(x, xs, K, w, y, ldy, ahead); break;
  }
}

// One weight row against MT rows of x (up to 4): the weights stream through memory as one
// sequence, front to back, which the hardware prefetchers follow at the full read rate; the x
// rows stay in L1. Below 4 rows of x, each row keeps two accumulators (even and odd 32-element
// steps): one chain of vdpbf16ps would wait on its latency every step, which on a long row (the
// down product's 4864) is more than the out-of-order window hides.
template <int MT>
DPBF16 void row(const uint16_t* x, int64_t xs, int64_t K, const uint16_t* w, float* y, int64_t ldy) {
  constexpr int kChains = MT < 4 ? 2 : 1;
  __m512 acc[MT], odd[MT];
#pragma GCC unroll 4
  for (int m = 0; m < MT; ++m) acc[m] = odd[m] = _mm512_setzero_ps();
  int64_t k = 0;
  if constexpr (kChains == 2)
    for (; k + 64 <= K; k += 64) {
      const __m512i w0 = _mm512_loadu_si512(w + k), w1 = _mm512_loadu_si512(w + k + 32);
#pragma GCC unroll 4
      for (int m = 0; m < MT; ++m) {
        acc[m] = dp(acc[m], _mm512_loadu_si512(x + m * xs + k), w0);
        odd[m] = dp(odd[m], _mm512_loadu_si512(x + m * xs + k + 32), w1);
      }
    }
  for (; k + 32 <= K; k += 32) {
    const __m512i wv = _mm512_loadu_si512(w + k);
#pragma GCC unroll 4
    for (int m = 0; m < MT; ++m) acc[m] = dp(acc[m], _mm512_loadu_si512(x + m * xs + k), wv);
  }
  if (k < K) {
    const __m512i wv = _mm512_maskz_loadu_epi16((1u << (K - k)) - 1, w + k);
#pragma GCC unroll 4
    for (int m = 0; m < MT; ++m) acc[m] = dp(acc[m], _mm512_loadu_si512(x + m * xs + k), wv);
  }
  if constexpr (kChains == 2)
#pragma GCC unroll 4
    for (int m = 0; m < MT; ++m) acc[m] = _mm512_add_ps(acc[m], odd[m]);
  int m = 0;
  for (; m + 4 <= MT; m += 4) {
    float s[4];
    _mm_storeu_ps(s, hsum4(acc[m], acc[m + 1], acc[m + 2], acc[m + 3]));
    for (int i = 0; i < 4; ++i) y[(m + i) * ldy] = s[i];
  }
  for (; m < MT; ++m) y[m * ldy] = _mm512_reduce_add_ps(acc[m]);
}

template <int MT>
DPBF16 void rows(const uint16_t* x, int64_t xs, int64_t K, const uint16_t* w, int64_t n0, int64_t n1, float* y,
                 int64_t ldy) {
  for (int64_t j = n0; j < n1; ++j) row<MT>(x, xs, K, w + j * K, y + j, ldy);
}

DPBF16 void to_bf16_rows(const float* x, int64_t M, int64_t K, uint16_t* xb) {
  const int64_t xs = bf16_row_stride(K);
  for (int64_t m = 0; m < M; ++m) {
    const float* src = x + m * K;
    uint16_t* dst = xb + m * xs;
    int64_t k = 0;
    for (; k + 32 <= K; k += 32) {
      const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + k + 16), _mm512_loadu_ps(src + k));
      _mm512_storeu_si512(dst + k, reinterpret_cast<const __m512i&>(v));
    }
    for (; k < K; ++k) dst[k] = float_to_bf16(src[k]);
    std::fill(dst + K, dst + xs, uint16_t{0});
  }
}

DPBF16 void matmul_dpbf16(const uint16_t* xb, int64_t M, int64_t K, const uint16_t* w, int64_t n0, int64_t n1,
                          float* y, int64_t ldy) {
  const int64_t xs = bf16_row_stride(K);
  if (M <= 0) return;
  // A few x rows that fit in L1 beside the stream: one weight row at a time (one memory stream);
  // more rows: tiles of 4 weight rows, each weight vector used by up to 6 x rows.
  if (M <= 4 && M * xs * 2 <= (16 << 10)) switch (M) {
    case 1: return rows<1>(xb, xs, K, w, n0, n1, y, ldy);
    case 2: return rows<2>(xb, xs, K, w, n0, n1, y, ldy);
    case 3: return rows<3>(xb, xs, K, w, n0, n1, y, ldy);
    case 4: return rows<4>(xb, xs, K, w, n0, n1, y, ldy);
    default: break;
  }
  // x rows in as few tiles of at most 6 as possible, of equal height (8 -> 4 + 4, not 6 + 2).
  const int64_t tiles = (M + 5) / 6, per = (M + tiles - 1) / tiles;
  // Prefetch whole groups of 4 rows ahead, at least ~16 KB (measured at M = 8: without it the
  // four streams read at ~60% of the rate). The first x tile of each group prefetches; later
  // ones find the rows in cache.
  const int64_t group = 4 * K, ahead = std::max<int64_t>(1, (16 << 10) / (2 * group)) * group;
  int64_t j = n0;
  for (; j + 4 <= n1; j += 4)
    for (int64_t m0 = 0; m0 < M; m0 += per)
      tile_rows<4>(std::min(per, M - m0), xb + m0 * xs, xs, K, w + j * K, y + m0 * ldy + j, ldy,
                   m0 == 0 && j + 4 + 4 <= n1 ? ahead : 0);
  for (; j < n1; ++j)
    for (int64_t m0 = 0; m0 < M; m0 += per)
      tile_rows<1>(std::min(per, M - m0), xb + m0 * xs, xs, K, w + j * K, y + m0 * ldy + j, ldy, 0);
}

}  // namespace

int64_t bf16_row_stride(int64_t K) { return (K + 31) / 32 * 32; }

uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN stays NaN
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);               // nearest, ties to even
}

void float_to_bf16_rows(const float* x, int64_t M, int64_t K, uint16_t* xb) { to_bf16_rows(x, M, K, xb); }

void matmul_wt_dpbf16(const uint16_t* xb, int64_t M, int64_t K, const uint16_t* w, int64_t n0, int64_t n1, float* y,
                      int64_t ldy) {
  matmul_dpbf16(xb, M, K, w, n0, n1, y, ldy);
}

}  // namespace roll::engine::kernels
