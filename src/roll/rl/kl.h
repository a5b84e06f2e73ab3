#pragma once
// KL estimators (docs/rl.md) and the KL coefficient controllers (docs/rl.md).
#include <ATen/core/Tensor.h>

#include <optional>
#include <string_view>

namespace roll::rl {

// d = ℓ − ℓ_base. kl (k1) = d; abs = |d|; mse (k2) = d²/2; k3 = clamp(e^{-d} + d − 1, −10, 10);
// full = Σ_v e^{ℓ}(ℓ − ℓ_base) over the vocabulary dimension.
enum class KlType { kl, abs, mse, k3, full };
KlType parse_kl_type(std::string_view name);
std::string_view to_string(KlType t);

// Per-token KL estimate × mask. For kl/abs/mse/k3 the inputs are gathered log-probs [B, T]; `full`
// needs full-vocabulary log-probs [B, T, V] (ROLL applies it to gathered log-probs, where it is
// meaningless; rollcpp refuses that with an error naming the shapes). `mask` may be undefined.
at::Tensor compute_approx_kl(const at::Tensor& log_probs, const at::Tensor& log_probs_base,
                             const at::Tensor& mask, KlType type);

// β for the token-level KL penalty. Fixed when target_kl is unset; adaptive otherwise:
// β ← β·(1 + clip(current/target − 1, −0.2, 0.2)·n_steps/horizon).
class KlController {
 public:
  static KlController fixed(double kl_coef);
  static KlController adaptive(double init_kl_coef, double target_kl, double horizon);
  // ROLL's choice from the config: init_kl_coef, target_kl (null -> fixed), kl_horizon.
  static KlController from_config(double init_kl_coef, std::optional<double> target_kl, double horizon);

  double value() const { return value_; }
  bool adaptive() const { return target_.has_value(); }
  void update(double current_kl, int64_t n_steps);

 private:
  double value_ = 0.0;
  std::optional<double> target_;
  double horizon_ = 1.0;
};

}  // namespace roll::rl
