#pragma once
// Custom autograd functions of training: per-layer activation checkpointing and the chunked LM-head
// log-prob (compute for memory), and RoPE with a backward of fewer passes.
#include <ATen/core/Tensor.h>

#include <functional>
#include <utility>
#include <vector>

namespace roll::model {

// Runs `fn(x)` without keeping its activations; backward recomputes it. `params` are the
// tensors `fn` reads that need gradients (the layer's weights).
at::Tensor checkpoint(const std::function<at::Tensor(const at::Tensor&)>& fn, const at::Tensor& x,
                      at::TensorList params);
// The same for a `fn` of several outputs; backward takes the gradients of those that have one.
std::vector<at::Tensor> checkpoint_outputs(const std::function<std::vector<at::Tensor>(const at::Tensor&)>& fn,
                                           const at::Tensor& x, at::TensorList params);

// Log-prob [M] (and entropy [M], or an undefined tensor) of `targets` [M] under
// softmax(hidden [M, H] @ weight [V, H]^T), in fp32, `chunk` rows at a time. The [M, V] logits are
// never held whole, in forward or backward (backward recomputes each chunk's logits).
std::pair<at::Tensor, at::Tensor> chunked_token_log_probs(const at::Tensor& hidden, const at::Tensor& weight,
                                                          const at::Tensor& targets, bool with_entropy,
                                                          int64_t chunk);

// HF's rotate-half RoPE, x·cos + rotate_half(x)·sin (cos, sin broadcast to x; no gradient), with a
// backward of two products and one half-swap: g·cos + rotate_half^T(g·sin). Autograd's own graph
// of the slices, negation and concatenation zero-fills and adds a full-size gradient per slice.
at::Tensor rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

}  // namespace roll::model
