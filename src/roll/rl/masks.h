#pragma once
// Sample-level masks of RLVR (docs/rl.md, get_sample_level_mask) and the agentic counterpart.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <limits>

#include "roll/rl/metrics.h"

namespace roll::rl {

// Every mask starts off and every threshold at the value that keeps all samples; ROLL's defaults
// live in config/rlvr_config.h.
struct SampleMaskParams {
  bool max_len_mask = false;
  bool difficulty_mask = false;
  double difficulty_low_threshold = -std::numeric_limits<double>::infinity();  // kept: low < mean < high
  double difficulty_high_threshold = std::numeric_limits<double>::infinity();
  bool error_max_len_clip = false;
  int64_t error_max_len_threshold = std::numeric_limits<int64_t>::max();
  int64_t num_return_sequences = 1;  // n: the difficulty mask averages the scores of a prompt's n samples
};

struct SampleMaskResult {
  at::Tensor keep;                 // [B] 0/1
  at::Tensor final_response_mask;  // m × keep, [B, T]
  bool skip_step = false;          // Σ fm == 0 over the whole batch: ROLL skips training this step
  MetricMap metrics;  // actor/{max_len_mask_ratio, difficulty_mask_ratio, error_len_mask_ratio, final_mask_ratio,
                      // samples_used, samples_total}; mask/final_mask_sum_eq_0 when skip_step
};

// response_mask: m = response_mask[:, 1:] ([B, T]); max_response_length: responses.shape[-1] (a response
// of that many tokens was truncated); scores [B] (needed by the difficulty and error masks).
// keep = 1 × [len != max_response_length] × [low < group mean score < high] (n > 1) ×
// [(score == 0 and len < threshold) or score == 1]. Ratios are 1.0 for masks that are off.
SampleMaskResult sample_level_mask(const at::Tensor& response_mask, int64_t max_response_length,
                                   const at::Tensor& scores, const SampleMaskParams& params);

// Agentic: fm = m (its max_len_mask is a no-op in ROLL); same metrics.
SampleMaskResult agentic_response_level_mask(const at::Tensor& response_mask);

}  // namespace roll::rl
