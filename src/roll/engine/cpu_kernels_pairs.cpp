// The bf16 matrix product for batches of rows on AVX512-BF16 (cpu_kernels.h). vdpbf16ps adds,
// in each of 16 fp32 lanes, the products of one pair of bf16 values by another. Here a lane is a
// row of x: x is packed so that one vector holds the pair (x[m][2p], x[m][2p + 1]) of 16 rows m
// (pack_x_pairs), and the weight pair (w[n][2p], w[n][2p + 1]) is broadcast to every lane, so the
// weights are read as stored ([N, K] row-major) and each vector instruction finishes 16 outputs'
// share of two k; no horizontal sums are left at the end. A tile keeps MB vectors of x (16 MB
// rows) against R weight rows in R x MB accumulators.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "roll/engine/avx512_transpose.h"
#include "roll/engine/cpu_kernels.h"

namespace roll::engine::kernels {
namespace {

#define PAIRS __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))

// The weight rows one tile takes against MB vectors of x: R x MB accumulators, MB x vectors and
// one broadcast weight pair fit in the 32 vector registers.
constexpr int tile_rows_for(int64_t MB) { return MB >= 4 ? 6 : MB == 3 ? 8 : MB == 2 ? 12 : 16; }
template <int MB>
constexpr int kRows = tile_rows_for(MB);

// y[m][n] for the 16 MB rows of x whose packed blocks start at xb (block stride 16 K) and R
// consecutive weight rows from w; `valid` rows of x are real (the last block may be part full).
template <int MB, int R>
PAIRS void tile(const uint16_t* xb, int64_t K, const uint16_t* w, int64_t valid, float* y, int64_t ldy) {
  __m512 acc[R][MB];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int i = 0; i < MB; ++i) acc[r][i] = _mm512_setzero_ps();
  const int64_t pairs = K / 2;
  for (int64_t p = 0; p < pairs; ++p) {
    __m512bh xv[MB];
#pragma GCC unroll 4
    for (int i = 0; i < MB; ++i) xv[i] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(xb + i * 16 * K + 32 * p));
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      int32_t pair;
      __builtin_memcpy(&pair, w + r * K + 2 * p, sizeof pair);
      const __m512bh wv = reinterpret_cast<__m512bh>(_mm512_set1_epi32(pair));
#pragma GCC unroll 4
      for (int i = 0; i < MB; ++i) acc[r][i] = _mm512_dpbf16_ps(acc[r][i], xv[i], wv);
    }
  }
  // Lane j of acc[r][i] is y[16 i + j][r]: scattered down the column, the rows past `valid` masked.
  const __m512i down = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                          _mm512_set1_epi32(static_cast<int32_t>(ldy)));
#pragma GCC unroll 4
  for (int i = 0; i < MB; ++i) {
    const int64_t left = valid - 16 * i;
    if (left <= 0) break;
    const __mmask16 rows = left >= 16 ? 0xffff : static_cast<__mmask16>((1u << left) - 1);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) _mm512_mask_i32scatter_ps(y + 16 * i * ldy + r, rows, down, acc[r][i], 4);
  }
}

using TileFn = void (*)(const uint16_t*, int64_t, const uint16_t*, int64_t, float*, int64_t);

// tile<MB, R> for R = 1 .. kRows<MB> (the last tile of a task may have fewer rows).
template <int MB, size_t... I>
constexpr std::array<TileFn, sizeof...(I)> tiles_of(std::index_sequence<I...>) {
  return {&tile<MB, static_cast<int>(I) + 1>...};
}

template <int MB>
PAIRS void rows_against_blocks(const uint16_t* xb, int64_t K, const uint16_t* w, int64_t n0, int64_t n1,
                               int64_t valid, float* y, int64_t ldy) {
  static constexpr auto fns = tiles_of<MB>(std::make_index_sequence<kRows<MB>>());
  for (int64_t n = n0; n < n1; n += kRows<MB>) {
    const int64_t r = std::min<int64_t>(kRows<MB>, n1 - n);
    fns[static_cast<size_t>(r - 1)](xb, K, w + n * K, valid, y + n, ldy);
  }
}

}  // namespace

int64_t dpbf16_pairs_tile_rows(int64_t M) { return tile_rows_for((M + 15) / 16); }

int64_t x_pairs_size(int64_t M, int64_t K) { return (M + 15) / 16 * 16 * K; }

void pack_x_pairs(const float* x, int64_t M, int64_t K, uint16_t* xp) {
  // Block b, pair p of the packed x: 16 rows' pairs in one vector (32 bf16) at xp + b 16 K + 32 p.
  const int64_t blocks = (M + 15) / 16;
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t k = 0; k < K; k += 32, xp += 16 * 32)
      pack_pairs_16x32(x + 16 * b * K + k, std::min<int64_t>(16, M - 16 * b), K, xp);
}

void matmul_wt_dpbf16_pairs(const uint16_t* xp, int64_t M, int64_t K, const uint16_t* w_bf16, int64_t n0, int64_t n1,
                            float* y, int64_t ldy) {
  // Weight rows outer: a tile's R rows are read once from memory and stay in cache while every
  // group of up to 4 x blocks (64 rows) passes over them.
  const int64_t blocks = (M + 15) / 16;
  for (int64_t nb = n0; nb < n1; nb += 48) {
    const int64_t ne = std::min(n1, nb + 48);
    for (int64_t b = 0; b < blocks; b += 4) {
      const uint16_t* xb = xp + b * 16 * K;
      const int64_t valid = M - 16 * b;
      float* yb = y + 16 * b * ldy;
      switch (std::min<int64_t>(4, blocks - b)) {
        case 4: rows_against_blocks<4>(xb, K, w_bf16, nb, ne, valid, yb, ldy); break;
        case 3: rows_against_blocks<3>(xb, K, w_bf16, nb, ne, valid, yb, ldy); break;
        case 2: rows_against_blocks<2>(xb, K, w_bf16, nb, ne, valid, yb, ldy); break;
        default: rows_against_blocks<1>(xb, K, w_bf16, nb, ne, valid, yb, ldy); break;
      }
    }
  }
}

}  // namespace roll::engine::kernels
