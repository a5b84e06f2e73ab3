#pragma once
// 8-lane fp32 building blocks of the AVX2 kernels (engine, LoRA merge, training's SwiGLU): bf16
// widened on load and rounded on store, and exp. Include only from files whose callers check
// core::cpu_features().avx2 before calling into code that uses them.
#include <c10/util/BFloat16.h>
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace roll::core::avx2 {

#define ROLL_AVX2 __attribute__((target("avx2,fma")))

// One bf16 (a raw 16-bit word) widened to fp32: exact, bf16 is the upper half of an fp32.
inline float widen_bf16(uint16_t v) {
  const uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// The sum of 8 lanes.
ROLL_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// 8 bf16 (raw 16-bit words) widened to fp32: exact, bf16 is the upper half of an fp32.
ROLL_AVX2 inline __m256 load8_bf16(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// 8 fp32 lanes to the bits of bf16 (in the low half of each 32-bit lane), nearest, ties to even;
// NaN stays a quiet NaN.
ROLL_AVX2 inline __m256i round_to_bf16_bits(__m256 v) {
  const __m256i bits = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
  return _mm256_blendv_epi8(rounded, _mm256_set1_epi32(0x7fc0), _mm256_castps_si256(nan));
}

// 8 fp32 lanes rounded to bf16 and stored.
ROLL_AVX2 inline void store8_bf16(uint16_t* out, __m256 v) {
  const __m256i bits = round_to_bf16_bits(v);
  // packus works within 128-bit lanes; the permute brings lanes 0-3 and 4-7 together in the low half.
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(bits, bits), 0xD8);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
}

// The same over the element types of training's tensors: fp32 as it is, c10::BFloat16 widened
// on load and rounded on store.
ROLL_AVX2 inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
ROLL_AVX2 inline __m256 load8(const c10::BFloat16* p) { return load8_bf16(reinterpret_cast<const uint16_t*>(p)); }
ROLL_AVX2 inline void store8(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
ROLL_AVX2 inline void store8(c10::BFloat16* p, __m256 v) { store8_bf16(reinterpret_cast<uint16_t*>(p), v); }

// exp(x) for 8 floats: Cephes' expf (range reduction by ln 2 in two parts, degree-5 polynomial),
// relative error ~1e-7; inputs below -87.3 give 0, above 88.4 the largest finite result.
ROLL_AVX2 inline __m256 exp8(__m256 x) {
  const __m256 lo = _mm256_set1_ps(-87.33654f), hi = _mm256_set1_ps(88.3762626647949f);
  const __m256 tiny = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  x = _mm256_max_ps(_mm256_min_ps(x, hi), lo);
  __m256 fx = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f));
  fx = _mm256_floor_ps(fx);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 y = _mm256_set1_ps(1.9875691500E-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507E-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073E-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894E-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459E-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201E-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
  const __m256i pow2n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(fx), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(tiny, _mm256_mul_ps(y, _mm256_castsi256_ps(pow2n)));
}

}  // namespace roll::core::avx2

namespace roll::core {

// fn(T{}) with T the element type of a bf16 tensor (`bf16`) or an fp32 one.
template <typename Fn>
void with_float_or_bf16(bool bf16, Fn&& fn) {
  if (bf16)
    fn(c10::BFloat16());
  else
    fn(float());
}

}  // namespace roll::core
