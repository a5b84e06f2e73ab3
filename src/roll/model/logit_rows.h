#pragma once
// The LM head's per-row softmax work over bf16 logits, in one pass per quantity over each row
// instead of ATen's chain (a cast to fp32, max, subtract, exp, sum, log, gather; in backward exp,
// scale, scatter and a cast back to bf16, each a pass over [rows, vocab]). The logits stay bf16,
// as the head's product wrote them; exp and every sum are fp32 per element, the sums accumulated
// in double. For bf16 heads on CPUs with AVX2 (logit_rows_apply); the caller keeps ATen's path
// elsewhere.
#include <ATen/core/Tensor.h>

namespace roll::model {

// Whether the head's product hidden x weightᵀ gives logits these kernels take: both bf16, on a CPU
// with AVX2.
bool logit_rows_apply(const at::Tensor& hidden, const at::Tensor& weight);

// For z = logits [rows, V] (bf16, contiguous) and targets [rows] (int64): lse = log Σ_j exp z_j, logp = z_target - lse
// and, when `entropy` is defined, entropy = lse - Σ_j softmax(z)_j z_j; each an fp32 [rows] tensor
// written in place.
void logit_rows_forward(const at::Tensor& logits, const at::Tensor& targets, const at::Tensor& lse,
                        const at::Tensor& logp, const at::Tensor& entropy);

// The gradient of Σ_r g_logp_r logp_r + g_ent_r entropy_r with respect to the logits, into `grad`
// (bf16 [rows, V]): with p = exp(z - lse),
//   grad_rj = g_logp_r (δ_{j,target_r} - p_rj) - g_ent_r p_rj (z_rj - lse_r + entropy_r).
// `g_logp` or `g_ent` (fp32 [rows]) may be undefined (no such term); `entropy` is needed with g_ent.
void logit_rows_backward(const at::Tensor& logits, const at::Tensor& targets, const at::Tensor& lse,
                         const at::Tensor& entropy, const at::Tensor& g_logp, const at::Tensor& g_ent,
                         const at::Tensor& grad);

}  // namespace roll::model
