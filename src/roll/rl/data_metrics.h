#pragma once
// Per-step data metrics with ROLL's names (docs/pipelines.md; roll/utils/metrics/metrics_manager.py): token
// lengths, critic/* score/reward/advantage statistics, group/* statistics over the n samples of a
// prompt, and mask usage. A score of 1 counts as correct and 0 as incorrect, as in ROLL.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include "roll/rl/metrics.h"

namespace roll::rl {

struct DataMetricsInputs {
  at::Tensor response_mask;        // m [B, T] (response_mask[:, 1:])
  at::Tensor final_response_mask;  // fm [B, T]; undefined -> m
  at::Tensor prompt_mask;          // [B, S], token metrics
  int64_t max_response_length = 0;  // responses.shape[-1]
  at::Tensor scores;               // [B]
  at::Tensor token_level_rewards;  // [B, T]
  at::Tensor advantages;           // [B, T]
  at::Tensor raw_advantages;       // [B, T]; undefined -> advantages
  at::Tensor returns;              // [B, T]
  at::Tensor values;               // [B, T], optional (critic/values/*)
  std::optional<double> entropy;   // aggregated entropy for critic/entropy/mean (0 when unset)
};

// <prefix>/{prompt_length,response_length,total_length}/{mean,max,min[,diff]},
// total_response_length/clip, right_/error_response_length/{clip,mean,max,min} (mean/max/min over the
// responses below the length cap; left out when there is none).
MetricMap token_metrics(const DataMetricsInputs& in, std::string_view prefix = "token");
// <prefix>/entropy/mean, correct/mean, score_distribution/*, score/*, rewards/*, token_level_rewards_mean/*,
// advantages/*, right_response/ and error_response/ advantages and raw_advantages {mean,max,min,std},
// raw_advantages/*, returns/*, values/*; statistics over fm tokens, left out when fm selects none.
MetricMap value_metrics(const DataMetricsInputs& in, std::string_view prefix = "critic");
// For n > 1 (B a multiple of n): <prefix>/response_length_diff/{mean,max,min}, correct_ratio/{mean,std},
// all_correct_groups_ratio, all_incorrect_groups_ratio, mixed_groups_ratio, advantage_diff/{mean,max,min},
// correct_vs_incorrect_advantage_diff/{mean,std}. Empty for n <= 1.
MetricMap group_metrics(const DataMetricsInputs& in, int64_t n, std::string_view prefix = "group");
// actor/{samples_used, samples_total, final_mask_ratio, token_keep_ratio}.
MetricMap mask_metrics(const at::Tensor& response_mask, const at::Tensor& final_response_mask,
                       std::string_view prefix = "actor");

}  // namespace roll::rl
