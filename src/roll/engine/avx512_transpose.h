#pragma once
// The in-register transpose and the x packing shared by the bf16 batch kernels (AMX tiles in
// cpu_kernels_amx.cpp, vdpbf16ps pairs in cpu_kernels_pairs.cpp); include only from files whose
// callers are compiled for AVX512-BF16.
#include <immintrin.h>

#include <cstdint>

namespace roll::engine::kernels {

#define ROLL_AVX512_BF16_INLINE __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16"))) inline

// 16 rows of 16 32-bit values, transposed in registers: row j of the result holds element j of
// every input row. Unpacks interleave pairs of rows, then 128-bit lanes are regrouped.
ROLL_AVX512_BF16_INLINE void transpose16(__m512i r[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 16; i += 4) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    t[i + 2] = _mm512_unpacklo_epi32(r[i + 2], r[i + 3]);
    t[i + 3] = _mm512_unpackhi_epi32(r[i + 2], r[i + 3]);
    // u[i + c], lane L: element 4 L + c of rows i .. i + 3
    u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512i p = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44), q = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xee);
    const __m512i p2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44),
                  q2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xee);
    r[c] = _mm512_shuffle_i32x4(p, p2, 0x88);
    r[4 + c] = _mm512_shuffle_i32x4(p, p2, 0xdd);
    r[8 + c] = _mm512_shuffle_i32x4(q, q2, 0x88);
    r[12 + c] = _mm512_shuffle_i32x4(q, q2, 0xdd);
  }
}

// 32 columns of `rows` (<= 16) rows of x (row stride K) rounded to bf16 and stored as 16 vectors
// at dst + 32 j, j < 16: vector j holds the pair (x[m][2 j], x[m][2 j + 1]) of every row m, zero
// for the rows past `rows`.
ROLL_AVX512_BF16_INLINE void pack_pairs_16x32(const float* x, int64_t rows, int64_t K, uint16_t* dst) {
  __m512i r[16];
  for (int64_t m = 0; m < 16; ++m) {
    if (m >= rows) {
      r[m] = _mm512_setzero_si512();
      continue;
    }
    const float* src = x + m * K;
    const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + 16), _mm512_loadu_ps(src));
    r[m] = reinterpret_cast<const __m512i&>(v);
  }
  transpose16(r);
  for (int j = 0; j < 16; ++j) _mm512_storeu_si512(dst + 32 * j, r[j]);
}

}  // namespace roll::engine::kernels
