#include "roll/rl/kl.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>

#include "roll/core/error.h"
#include "roll/rl/check.h"

namespace roll::rl {
namespace {

constexpr std::pair<std::string_view, KlType> kKlTypes[] = {
    {"kl", KlType::kl}, {"abs", KlType::abs}, {"mse", KlType::mse}, {"k3", KlType::k3}, {"full", KlType::full}};

}  // namespace

KlType parse_kl_type(std::string_view name) {
  for (const auto& [n, t] : kKlTypes)
    if (n == name) return t;
  throw Error(fmt::format("kl type '{}' is not known; use kl, abs, mse, k3 or full", name));
}

std::string_view to_string(KlType t) {
  for (const auto& [n, v] : kKlTypes)
    if (v == t) return n;
  return "?";
}

at::Tensor compute_approx_kl(const at::Tensor& log_probs, const at::Tensor& log_probs_base,
                             const at::Tensor& mask, KlType type) {
  detail::check_same_shape(log_probs, "log_probs", log_probs_base, "log_probs_base");
  at::Tensor out;
  switch (type) {
    case KlType::kl:
      out = log_probs - log_probs_base;
      break;
    case KlType::abs:
      out = (log_probs - log_probs_base).abs();
      break;
    case KlType::mse:
      out = 0.5 * (log_probs - log_probs_base).pow(2);
      break;
    case KlType::k3: {
      at::Tensor d = log_probs_base - log_probs;
      out = at::clamp(at::exp(d) - d - 1.0, -10.0, 10.0);
      break;
    }
    case KlType::full: {
      if (log_probs.dim() != 3)
        throw Error(fmt::format("kl type 'full' needs full-vocabulary log-probs [B, T, V]; got log_probs of "
                                "shape {} (per-token log-probs carry no distribution to compare)",
                                detail::shape_str(log_probs)));
      // kl_div(input=ℓ_base, target=ℓ, log_target) = e^{ℓ}·(ℓ − ℓ_base), summed over the vocabulary.
      out = (at::exp(log_probs) * (log_probs - log_probs_base)).sum(-1);
      break;
    }
  }
  if (mask.defined()) {
    detail::check_same_shape(out, "kl", mask, "mask");
    out = out * detail::as_mask(mask, out);
  }
  return out;
}

KlController KlController::fixed(double kl_coef) {
  KlController c;
  c.value_ = kl_coef;
  return c;
}

KlController KlController::adaptive(double init_kl_coef, double target_kl, double horizon) {
  if (target_kl <= 0) throw Error(fmt::format("target_kl must be > 0 for the adaptive KL controller, got {}", target_kl));
  if (horizon <= 0) throw Error(fmt::format("kl_horizon must be > 0, got {}", horizon));
  KlController c;
  c.value_ = init_kl_coef;
  c.target_ = target_kl;
  c.horizon_ = horizon;
  return c;
}

KlController KlController::from_config(double init_kl_coef, std::optional<double> target_kl, double horizon) {
  return target_kl ? adaptive(init_kl_coef, *target_kl, horizon) : fixed(init_kl_coef);
}

void KlController::update(double current_kl, int64_t n_steps) {
  if (!target_) return;
  double err = std::clamp(current_kl / *target_ - 1.0, -0.2, 0.2);
  value_ *= 1.0 + err * static_cast<double>(n_steps) / horizon_;
}

}  // namespace roll::rl
