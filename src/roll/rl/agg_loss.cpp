#include "roll/rl/agg_loss.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "roll/core/error.h"
#include "roll/rl/check.h"
#include "roll/rl/masked.h"

namespace roll::rl {
namespace {

constexpr std::pair<std::string_view, LossAggMode> kModes[] = {
    {"token-mean", LossAggMode::token_mean},
    {"seq-mean-token-sum", LossAggMode::seq_mean_token_sum},
    {"seq-mean-token-mean", LossAggMode::seq_mean_token_mean},
    {"seq-mean-token-sum-norm", LossAggMode::seq_mean_token_sum_norm},
};

}  // namespace

LossAggMode parse_loss_agg_mode(std::string_view name) {
  for (const auto& [n, m] : kModes)
    if (n == name) return m;
  throw Error(fmt::format("loss_agg_mode '{}' is not known; use token-mean, seq-mean-token-sum, "
                          "seq-mean-token-mean or seq-mean-token-sum-norm",
                          name));
}

std::string_view to_string(LossAggMode mode) {
  for (const auto& [n, m] : kModes)
    if (m == mode) return n;
  return "?";
}

at::Tensor agg_loss(const at::Tensor& loss_mat, const at::Tensor& mask, LossAggMode mode, const AggNorm& norm,
                    const at::Tensor& weights) {
  detail::check_dims(loss_mat, "loss_mat", {-1, -1});
  detail::check_same_shape(mask, "loss_mask", loss_mat, "loss_mat");
  const int64_t B = loss_mat.size(0);
  at::Tensor w = weights.defined() ? weights : at::ones({B}, loss_mat.options());
  detail::check_dims(w, "weights", {B});
  w = w.to(loss_mat.scalar_type());
  at::Tensor m = detail::as_mask(mask, loss_mat);
  if (mode == LossAggMode::token_mean) {
    at::Tensor sum = (loss_mat * w.unsqueeze(-1)).sum();
    return norm.num_tokens ? sum / *norm.num_tokens : sum / m.sum();
  }
  at::Tensor valid = (m > 0).any(-1).to(loss_mat.scalar_type());
  at::Tensor seq = mode == LossAggMode::seq_mean_token_mean ? masked_mean_rows(loss_mat, m) : masked_sum_rows(loss_mat, m);
  at::Tensor total = (seq * w * valid).sum();
  if (mode == LossAggMode::seq_mean_token_sum_norm) return total / static_cast<double>(m.size(-1));
  double g = norm.num_valid_samples ? *norm.num_valid_samples : static_cast<double>(B);
  return total / (g + 1e-8);
}

AggNorm local_agg_norm(const at::Tensor& mask) {
  at::Tensor m = mask.to(at::kFloat);
  return {m.sum().item<double>(), (m > 0).any(-1).sum().item<double>()};
}

double loss_scale_factor(int64_t num_micro_batches, int64_t dp_size) {
  if (num_micro_batches <= 0 || dp_size <= 0)
    throw Error(fmt::format("loss scale needs positive sizes; got num_micro_batches {}, dp_size {}",
                            num_micro_batches, dp_size));
  return static_cast<double>(num_micro_batches * dp_size);
}

}  // namespace roll::rl
