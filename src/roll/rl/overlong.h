#pragma once
// DAPO overlong reward shaping (rollcpp extension; config `overlong_reward: {enable, buffer_len,
// penalty_factor}`). A response of length L against the maximum response length L_max and a buffer
// L_buf gets a penalty 0 when L <= L_max − L_buf, (L_max − L_buf − L)/L_buf inside the buffer, and −1 past
// L_max; scaled by penalty_factor and added to the response-level reward before normalisation.
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "roll/rl/metrics.h"

namespace roll::rl {

// Off and neutral until set; ROLL's defaults live in config/rl_config.h.
struct OverlongParams {
  bool enable = false;
  int64_t buffer_len = 0;
  double penalty_factor = 0.0;
};

// The penalty per sample ([B], <= 0); zeros when disabled. buffer_len must lie in (0, max_response_length].
at::Tensor overlong_penalty(const at::Tensor& response_lengths, int64_t max_response_length,
                            const OverlongParams& params);

// critic/overlong_penalty_mean and critic/overlong_penalized_ratio of a [B] penalty.
MetricMap overlong_metrics(const at::Tensor& penalty);

struct OverlongResult {
  at::Tensor rewards;  // rewards + penalty
  at::Tensor penalty;  // [B]
  MetricMap metrics;   // critic/overlong_penalty_mean, critic/overlong_penalized_ratio
};
OverlongResult apply_overlong_penalty(const at::Tensor& response_level_rewards, const at::Tensor& response_lengths,
                                      int64_t max_response_length, const OverlongParams& params);

}  // namespace roll::rl
