#pragma once
// A linear module with its LoRA adapter: y = x Wᵀ + b + scale · (dropout(x) Aᵀ) Bᵀ, the adapter part
// in the adapter's dtype (PEFT's order: the input cast to the adapter's dtype, the sum back in the
// module's dtype).
//
// Over a frozen CPU base with fp32 adapters and no dropout (LoRA training, docs/lora.md) the
// adapter's rank-r update is added into the base product in place, formed in fp32 and rounded
// once (the merge kernel, model/lora_merge_kernel.h, with the tokens as rows), and backward is
// written out: dx = g W + scale (g B) A in the same way, dA = scale (g B)ᵀ x, dB = scale gᵀ (x Aᵀ).
// Autograd's own graph of the same formula casts, scales and adds full [tokens, out] tensors in
// both directions, which cost about as much as the adapter's products. Other cases (a base that
// trains, dropout in training, bf16 adapters, CUDA) take that graph.
#include <ATen/core/Tensor.h>

namespace roll::model {

// x [..., in], w [out, in], b [out] or undefined, a [rank, in], bm [out, rank] -> [..., out].
at::Tensor lora_linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const at::Tensor& a,
                       const at::Tensor& bm, double scale, double dropout);

}  // namespace roll::model
