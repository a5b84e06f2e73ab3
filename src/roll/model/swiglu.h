#pragma once
// The MLP's SwiGLU activation, silu(gate) * up, with its backward, for training and scoring.
// On CPUs with AVX2, bf16 or fp32 tensors go through one pass each way, the math in fp32 and the
// results rounded once: ATen runs silu, the product and, in backward, two products and
// silu_backward as separate passes, each rounding to bf16 (a 0.5B step spent ~0.5 s in them).
// Elsewhere (CUDA, other dtypes, no AVX2) ATen's ops.
#include <ATen/core/Tensor.h>

namespace roll::model {

// gate, up of one shape -> silu(gate) * up; silu(g) = g / (1 + exp(-g)).
at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up);

}  // namespace roll::model
