#pragma once
// Train–infer mismatch correction (docs/rl.md, roll/utils/train_infer_corrections.py): ratios and
// probability differences between the training engine's ℓ_old and the inference engine's ℓ_inf, an
// importance-sampling weight, and filters that mask tokens whose mismatch is out of range.
#include <ATen/core/Tensor.h>

#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "roll/rl/agg_loss.h"
#include "roll/rl/metrics.h"

namespace roll::rl {

// token: per token; geometric: e^{masked_mean_t(q)} per sequence; sequence: e^{Σ_t q·m}; segment:
// e^{segment_mean(q)} per turn. (q = ℓ_old − ℓ_inf; diffs use e^{ℓ_old} − e^{ℓ_inf} the same way.)
enum class MismatchGranularity { token, geometric, sequence, segment };
MismatchGranularity parse_mismatch_granularity(std::string_view name);
std::string_view to_string(MismatchGranularity g);

// ROLL's defaults (upper bound 1.2, ratio [0.8, 1.2], diff [-0.2, 0.2]) are written once, in
// config/rl_config.h; workers/loss_params_from_config.cpp fills these from it. Left at their
// initial values they change nothing: no weight clip, and bounds that keep every token.
struct IsWeightParams {
  bool enabled = false;
  MismatchGranularity weight_type = MismatchGranularity::token;
  std::optional<double> upper_bound;
  bool detach = true;
};
struct MismatchFilter {
  bool enabled = false;
  MismatchGranularity agg_type = MismatchGranularity::token;
  bool ratio_enabled = false;
  double ratio_low = -std::numeric_limits<double>::infinity();
  double ratio_high = std::numeric_limits<double>::infinity();
  bool diff_enabled = false;
  double diff_low = -std::numeric_limits<double>::infinity();
  double diff_high = std::numeric_limits<double>::infinity();
};
struct TrainInferParams {
  IsWeightParams is_weight;
  std::vector<MismatchFilter> filters;
};

struct MismatchStats {
  at::Tensor ratio[4];  // indexed by MismatchGranularity, each [B, T]
  at::Tensor diff[4];
};
MismatchStats mismatch_stats(const at::Tensor& old_log_probs, const at::Tensor& infer_log_probs,
                             const at::Tensor& response_mask);

struct TrainInferResult {
  at::Tensor is_weight;    // [B, T]; ones when is_weight is disabled
  at::Tensor filter_mask;  // [B, T] 0/1 product of the enabled filters (multiply into m and fm)
  MetricMap metrics;       // actor/train_infer_{ratio,diff}_<g>_mean@sum, actor/train_infer_kl@sum, ...
};
// infer_log_probs undefined (or empty) -> ℓ_old (no mismatch). `norm` holds the global valid tokens
// and samples of response_mask; unset -> counted from the mask (at least 1).
TrainInferResult train_infer_correction(const at::Tensor& response_mask, const at::Tensor& old_log_probs,
                                        const at::Tensor& infer_log_probs, const TrainInferParams& params,
                                        const AggNorm& norm = {});

}  // namespace roll::rl
