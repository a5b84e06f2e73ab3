#pragma once
// dst += src for a parameter's gradient into its fp32 unit buffer. A bf16 gradient is widened in
// the same pass (ATen's mixed-dtype add_ first copies it into an fp32 temporary, then adds: three
// passes over a 0.5B model's gradients per micro-batch instead of one).
#include <ATen/core/Tensor.h>

namespace roll::train {

// `dst`: fp32; `src`: fp32 or bf16 of dst's shape. CPU tensors, both contiguous, take the fused
// loop; anything else ATen's add_.
void accumulate_grad(at::Tensor dst, const at::Tensor& src);

}  // namespace roll::train
