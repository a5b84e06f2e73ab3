#pragma once
// What the AVX2 kernels share (cpu_kernels.cpp, cpu_kernels_avx2_tiles.cpp): a bf16 value
// widened to fp32 and the horizontal sum of 8 lanes. Include only from files whose callers
// check for AVX2 before calling into AVX2 code.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace roll::engine::kernels {

// bf16 is the upper half of an fp32: widening is exact.
inline float widen_bf16(uint16_t v) {
  const uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

__attribute__((target("avx2,fma"))) inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace roll::engine::kernels
