#pragma once
// The CPU kernel behind model::rope (autograd_ops.h): HF's rotate-half RoPE, y = x·cos +
// rotate_half(x)·sin, and its transpose for backward, in one pass over x [..., heads, D] with
// cos, sin [..., 1, D] (one row per token, shared by its heads). fp32 arithmetic, the result
// rounded once to bf16; ATen's formula runs two products, a negated half-swap and a sum, each a
// pass rounding to bf16.
#include <ATen/core/Tensor.h>

namespace roll::model {

// Whether the kernel takes these tensors: an AVX2 CPU; x contiguous bf16 or fp32 [..., H, D] with
// D even; cos and sin of x's dtype, contiguous, x's shape with 1 head.
bool rope_kernel_applies(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

// transpose = false: y = x·cos + rotate_half(x)·sin, i.e. (y1, y2) = (x1 c1 − x2 s1, x2 c2 + x1 s2).
// transpose = true (backward, x the gradient): (x1 c1 + x2 s2, x2 c2 − x1 s1).
at::Tensor rope_cpu(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, bool transpose);

}  // namespace roll::model
