#pragma once
// HF's RMSNorm, w · (x · rsqrt(mean(x²) + eps)) with the normalisation in fp32 and the scale in the
// input's dtype, with its backward. On CPUs with AVX2, bf16 or fp32 rows go through two passes
// forward and two backward, keeping HF's roundings (the normalised row rounded to the dtype, then
// the product with w); ATen ran about ten operations each way, most of them a pass over the
// activations (a 0.5B step spent ~0.2 s in them). Elsewhere ATen's ops.
#include <ATen/core/Tensor.h>

namespace roll::model {

// x [..., n], w [n] of x's dtype -> [..., n].
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps);

}  // namespace roll::model
