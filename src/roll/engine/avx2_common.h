#pragma once
// What the AVX2 kernels share (cpu_kernels.cpp, cpu_kernels_avx2_tiles.cpp): a bf16 value
// widened to fp32 and the horizontal sum of 8 lanes. Include only from files whose callers
// check for AVX2 before calling into AVX2 code.
#include "roll/core/avx2_vec.h"

namespace roll::engine::kernels {

using core::avx2::hsum;
using core::avx2::widen_bf16;

}  // namespace roll::engine::kernels
