// The matrix product for many rows (prefill, batched decode) on AVX2 (cpu_kernels.h): bf16 weights
// where the CPU has no bf16 instructions, fp32 weights where it has no AVX-512. The register tile
// is the classic one for 16 ymm registers: 6 rows of x against 16 outputs, 12 accumulators, each
// k one broadcast of x per row against two vectors of 8 weights. Those 16 weights per k must sit
// side by side, so a panel of 16 weight rows is packed once per block of k, transposed to [k][16]
// by 8x8 transposes in registers. bf16 panels stay bf16 (the transposes move pairs), in an order
// that one shift and one mask widen (pack_panel); packing bf16 rather than widened fp32 halves
// the packing's stores and ran 10-15% faster at 16-64 rows. Packing costs a pass over the weights
// per call, which the panel's reuse by every group of 6 rows of x pays back from ~13 rows on long
// rows and ~24 on short ones for bf16 (the dot-product kernels, split and streaming, stay ahead
// below that), from 9 rows for fp32. A block of 4 panels over at most 1024 k (128 KB bf16, 256 KB
// fp32) stays in L2 while all of x passes it; sums over k blocks accumulate in y.
#include <immintrin.h>

#include <algorithm>

#include "roll/engine/avx2_common.h"
#include "roll/engine/cpu_kernels.h"

namespace roll::engine::kernels {
namespace {

#define AVX2 __attribute__((target("avx2,fma")))

constexpr int64_t kPanel = 16;          // weight rows per packed panel (two ymm of outputs)
constexpr int64_t kPanelsPerBlock = 4;  // panels packed together and reused by all of x
constexpr int64_t kMaxKBlock = 1024;    // k per block at most
constexpr int kRowsPerTile = 6;         // rows of x per register tile

// k per block: K cut into equal blocks of at most kMaxKBlock, rounded up to 16.
int64_t k_block(int64_t K) {
  const int64_t blocks = (K + kMaxKBlock - 1) / kMaxKBlock;
  return ((K + blocks - 1) / blocks + 15) / 16 * 16;
}

AVX2 inline void transpose8(__m256* r) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20), r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20), r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31), r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31), r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// The 16 bf16 weights of one k as the tile loads them: 32-bit lane j holds row j in its low half
// and row j + 8 in its high half, so a shift widens rows 0..7 and a mask rows 8..15, in order.
// panel[k * 16 + 2 j] = w[j][k], panel[k * 16 + 2 j + 1] = w[j + 8][k], for kl values of k.
AVX2 void pack_panel(const uint16_t* w, int64_t ldw, int64_t kl, uint16_t* panel) {
  int64_t k = 0;
  for (; k + 16 <= kl; k += 16) {
    // Interleaving rows j and j + 8 gives, per 128-bit half, 32-bit pairs for 4 values of k: lo
    // holds k 0..3 | 8..11, hi k 4..7 | 12..15. An 8x8 transpose of the pairs (as floats) then
    // gathers each k's 8 pairs into one vector.
    __m256 lo[8], hi[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + j * ldw + k));
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + (j + 8) * ldw + k));
      lo[j] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(a, b));
      hi[j] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(a, b));
    }
    transpose8(lo);
    transpose8(hi);
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      _mm256_storeu_ps(reinterpret_cast<float*>(panel + (k + c) * kPanel), lo[c]);
      _mm256_storeu_ps(reinterpret_cast<float*>(panel + (k + 4 + c) * kPanel), hi[c]);
      _mm256_storeu_ps(reinterpret_cast<float*>(panel + (k + 8 + c) * kPanel), lo[4 + c]);
      _mm256_storeu_ps(reinterpret_cast<float*>(panel + (k + 12 + c) * kPanel), hi[4 + c]);
    }
  }
  for (; k < kl; ++k)
    for (int64_t j = 0; j < 8; ++j) {
      panel[k * kPanel + 2 * j] = w[j * ldw + k];
      panel[k * kPanel + 2 * j + 1] = w[(j + 8) * ldw + k];
    }
}

// fp32 weights: panel[k * 16 + j] = w[j][k], for 16 rows and kl values of k.
AVX2 void pack_panel(const float* w, int64_t ldw, int64_t kl, float* panel) {
  int64_t k = 0;
  for (; k + 8 <= kl; k += 8)
    for (int half = 0; half < 2; ++half) {
      __m256 r[8];
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(w + (half * 8 + j) * ldw + k);
      transpose8(r);
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) _mm256_storeu_ps(panel + (k + i) * kPanel + half * 8, r[i]);
    }
  for (; k < kl; ++k)
    for (int64_t j = 0; j < kPanel; ++j) panel[k * kPanel + j] = w[j * ldw + k];
}

// The 16 weights of one k of a panel as two vectors of 8 fp32 (rows 0..7, rows 8..15).
AVX2 inline void load_k(const uint16_t* panel_k, __m256& w0, __m256& w1) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel_k));
  w0 = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  w1 = _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
}
AVX2 inline void load_k(const float* panel_k, __m256& w0, __m256& w1) {
  w0 = _mm256_loadu_ps(panel_k);
  w1 = _mm256_loadu_ps(panel_k + 8);
}

// y[i * ldy + 0..15] (+)= x_i . panel over kl values of k, for RM rows of x (ldx apart).
template <int RM, bool kAccumulate, typename P>
AVX2 void tile(const float* x, int64_t ldx, const P* panel, int64_t kl, float* y, int64_t ldy) {
  __m256 acc[RM][2];
#pragma GCC unroll 6
  for (int i = 0; i < RM; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  for (int64_t k = 0; k < kl; ++k) {
    __m256 w0, w1;
    load_k(panel + k * kPanel, w0, w1);
#pragma GCC unroll 6
    for (int i = 0; i < RM; ++i) {
      const __m256 xi = _mm256_broadcast_ss(x + i * ldx + k);
      acc[i][0] = _mm256_fmadd_ps(xi, w0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(xi, w1, acc[i][1]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < RM; ++i) {
    float* yi = y + i * ldy;
    if (kAccumulate) {
      acc[i][0] = _mm256_add_ps(acc[i][0], _mm256_loadu_ps(yi));
      acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_loadu_ps(yi + 8));
    }
    _mm256_storeu_ps(yi, acc[i][0]);
    _mm256_storeu_ps(yi + 8, acc[i][1]);
  }
}

template <bool kAccumulate, typename P>
AVX2 void tile_rows(int rows, const float* x, int64_t ldx, const P* panel, int64_t kl, float* y, int64_t ldy) {
  switch (rows) {
    case 6: tile<6, kAccumulate>(x, ldx, panel, kl, y, ldy); break;
    case 5: tile<5, kAccumulate>(x, ldx, panel, kl, y, ldy); break;
    case 4: tile<4, kAccumulate>(x, ldx, panel, kl, y, ldy); break;
    case 3: tile<3, kAccumulate>(x, ldx, panel, kl, y, ldy); break;
    case 2: tile<2, kAccumulate>(x, ldx, panel, kl, y, ldy); break;
    default: tile<1, kAccumulate>(x, ldx, panel, kl, y, ldy); break;
  }
}

// W is the weights' element type (uint16_t for bf16, float), panels hold the same type.
template <typename W>
void packed_product(const float* x, int64_t M, int64_t K, const W* w, int64_t n0, int64_t n1, float* y, int64_t ldy,
                    W* buffer) {
  const int64_t kb = k_block(K), full_end = n0 + (n1 - n0) / kPanel * kPanel;
  for (int64_t b0 = n0; b0 < full_end; b0 += kPanelsPerBlock * kPanel) {
    const int64_t b1 = std::min(full_end, b0 + kPanelsPerBlock * kPanel);
    for (int64_t k0 = 0; k0 < K; k0 += kb) {
      const int64_t kl = std::min(kb, K - k0);
      for (int64_t p = b0; p < b1; p += kPanel) pack_panel(w + p * K + k0, K, kl, buffer + (p - b0) * kb);
      for (int64_t m = 0; m < M; m += kRowsPerTile) {
        const int rows = static_cast<int>(std::min<int64_t>(kRowsPerTile, M - m));
        for (int64_t p = b0; p < b1; p += kPanel) {
          const W* panel = buffer + (p - b0) * kb;
          float* yt = y + m * ldy + p;
          if (k0 == 0) tile_rows<false>(rows, x + m * K + k0, K, panel, kl, yt, ldy);
          else tile_rows<true>(rows, x + m * K + k0, K, panel, kl, yt, ldy);
        }
      }
    }
  }
  // Fewer than 16 rows left: the streaming kernel.
  if (full_end < n1) matmul_wt(x, M, K, w, full_end, n1, y, ldy);
}

}  // namespace

int64_t packed_buffer_size(int64_t K) { return kPanelsPerBlock * kPanel * k_block(K); }

void matmul_wt_packed(const float* x, int64_t M, int64_t K, const uint16_t* w, int64_t n0, int64_t n1, float* y,
                      int64_t ldy, uint16_t* buffer) {
  packed_product(x, M, K, w, n0, n1, y, ldy, buffer);
}

void matmul_wt_packed(const float* x, int64_t M, int64_t K, const float* w, int64_t n0, int64_t n1, float* y,
                      int64_t ldy, float* buffer) {
  packed_product(x, M, K, w, n0, n1, y, ldy, buffer);
}

}  // namespace roll::engine::kernels
