#pragma once
// Loss aggregation (docs/rl.md, ROLL's agg_loss) and the train-step loss scale.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace roll::rl {

enum class LossAggMode { token_mean, seq_mean_token_sum, seq_mean_token_mean, seq_mean_token_sum_norm };
// "token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm".
LossAggMode parse_loss_agg_mode(std::string_view name);
std::string_view to_string(LossAggMode mode);

// Global normalisers of one backward mini-batch, all-reduced over data parallel ranks by the caller:
// num_tokens = N_tok = Σ mask (÷ cp size, min 1); num_valid_samples = G = rows with a mask token.
// Unset: N_tok = Σ mask of this call, G = number of rows (ROLL's defaults).
struct AggNorm {
  std::optional<double> num_tokens;
  std::optional<double> num_valid_samples;
};

// loss_mat, mask [B, T]; weights [B] (ones when undefined); v_b = 1 if row b has a mask token.
// token-mean:              Σ_{b,t} w_b·L / N_tok   (L is NOT masked here: ROLL assumes a pre-masked matrix)
// seq-mean-token-sum:      Σ_b w_b·v_b·Σ_t L·M / (G + 1e-8)
// seq-mean-token-mean:     Σ_b w_b·v_b·(Σ_t L·M / (Σ_t M + 1e-8)) / (G + 1e-8)
// seq-mean-token-sum-norm: Σ_b w_b·v_b·Σ_t L·M / T  (Dr.GRPO; T = mask.size(-1))
at::Tensor agg_loss(const at::Tensor& loss_mat, const at::Tensor& mask, LossAggMode mode, const AggNorm& norm = {},
                    const at::Tensor& weights = {});

// The normalisers of a mask: {Σ mask, rows with a mask token} (before any all-reduce).
AggNorm local_agg_norm(const at::Tensor& mask);

// ROLL's `loss_scale` for `apply_loss_scale: true` (Megatron and FSDP2 strategies): every micro-batch
// loss, aggregated with the global normalisers above, is multiplied by num_micro_batches·dp_size. The
// backend then divides by the number of micro-batches (Megatron's schedule; ROLL's FSDP2 step divides
// by GA) and averages gradients over DP, so the accumulated gradient equals the gradient of the global
// loss Σ_ranks Σ_micro-batches loss (each micro-batch is one slice of it).
double loss_scale_factor(int64_t num_micro_batches, int64_t dp_size);

}  // namespace roll::rl
