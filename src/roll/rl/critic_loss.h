#pragma once
// Critic (value) loss of the GAE path (docs/rl.md).
#include <ATen/core/Tensor.h>

#include <optional>

#include "roll/rl/metrics.h"

namespace roll::rl {

struct ValueLossResult {
  at::Tensor loss;    // 0.5 · mean_b(masked_mean_t(l_t))
  MetricMap metrics;  // critic/loss, critic/value, critic/vpred, critic/clipfrac, critic/error
};

// values = V (value head output [:, :-1]), old_values = V_old, returns = Ret, all [B, T]. With value_clip
// c: V_c = clip(V, V_old − c, V_old + c), l = max((V − Ret)², (V_c − Ret)²) and critic/clipfrac is the
// share of tokens where the clipped error is larger; without it l = (V − Ret)² and critic/clipfrac is 0
// (ROLL reports the unclipped loss under that name there).
ValueLossResult value_loss(const at::Tensor& values, const at::Tensor& old_values, const at::Tensor& returns,
                           const at::Tensor& mask, std::optional<double> value_clip);

}  // namespace roll::rl
