#pragma once
// Masked reductions over [B, T] token grids (the notation of docs/rl.md). Masks may be bool, integer or
// floating; they are used as 0/1 weights in the dtype of the values.
#include <ATen/core/Tensor.h>

namespace roll::rl {

// Σ x·m / (Σ m + 1e-8) over all entries: a 0-dim tensor.
at::Tensor masked_mean(const at::Tensor& x, const at::Tensor& mask);
// Per row: Σ_t x·m / (Σ_t m + 1e-8), and exactly 0 for rows without a mask token. Shape [B].
at::Tensor masked_mean_rows(const at::Tensor& x, const at::Tensor& mask);
// Per row: Σ_t x·m (0 for rows without a mask token). Shape [B].
at::Tensor masked_sum_rows(const at::Tensor& x, const at::Tensor& mask);
// Variance over the masked entries; unbiased (N/(N-1)) by default. N = Σ m must be >= 2 when unbiased
// (>= 1 otherwise): roll::Error otherwise, naming `name`.
at::Tensor masked_var(const at::Tensor& x, const at::Tensor& mask, bool unbiased = true,
                      const char* name = "values");
// (x - μ) / sqrt(var + 1e-8) with the masked mean and unbiased masked variance; μ is added back when
// shift_mean is false. Needs Σ m >= 2 (callers that may see fewer tokens skip whitening, see
// compute_advantage).
at::Tensor masked_whiten(const at::Tensor& x, const at::Tensor& mask, bool shift_mean = true,
                         const char* name = "values");
// Segment-wise masked mean: every maximal run of 1s in a row of `mask` (an agentic turn) gets the mean
// of `x` over that run; positions outside the mask get 0. Differentiable in x. [B, T] -> [B, T].
at::Tensor segment_masked_mean(const at::Tensor& x, const at::Tensor& mask);
// Per-position segment index (1, 2, ... per row; 0 outside the mask), int64 [B, T].
at::Tensor segment_ids(const at::Tensor& mask);
// Fraction of ALL entries of `values` above hi or below lo (0 for an empty tensor), as ROLL's
// compute_clip_fraction: masked zeros count as entries.
double clip_fraction(const at::Tensor& values, double lo, double hi);

}  // namespace roll::rl
