#include "roll/train/grad_accumulate.h"

#include <ATen/ATen.h>

#include <immintrin.h>

#include <cstring>

#include "roll/core/cpu_features.h"
#include "roll/core/parallel_for.h"

namespace roll::train {
namespace {

// Elements per task of the parallel loop.
constexpr int64_t kGrain = 1 << 16;

float widen(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;  // bf16 is the top half of an fp32
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

__attribute__((target("avx2,fma"))) int64_t add_bf16_avx2(float* dst, const uint16_t* src, int64_t begin,
                                                          int64_t end) {
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m128i half = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m256 wide = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(half), 16));
    _mm256_storeu_ps(dst + i, _mm256_add_ps(_mm256_loadu_ps(dst + i), wide));
  }
  return i;
}

}  // namespace

void accumulate_grad(at::Tensor dst, const at::Tensor& src) {
  const bool fused = dst.is_cpu() && src.is_cpu() && dst.scalar_type() == at::kFloat &&
                     src.scalar_type() == at::kBFloat16 && dst.is_contiguous() && src.is_contiguous() &&
                     dst.numel() == src.numel();
  if (!fused) {
    dst.add_(src);
    return;
  }
  float* d = dst.data_ptr<float>();
  const auto* s = reinterpret_cast<const uint16_t*>(src.data_ptr<at::BFloat16>());
  const bool avx2 = core::cpu_features().avx2;
  at::parallel_for(0, dst.numel(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = avx2 ? add_bf16_avx2(d, s, begin, end) : begin; i < end; ++i) d[i] += widen(s[i]);
  });
}

}  // namespace roll::train
