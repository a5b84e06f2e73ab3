#include "roll/rl/estimator.h"

#include <fmt/format.h>

#include "roll/core/error.h"

namespace roll::rl {
namespace {

constexpr std::pair<std::string_view, AdvEstimator> kEstimators[] = {
    {"gae", AdvEstimator::gae},
    {"reinforce", AdvEstimator::reinforce},
    {"grpo", AdvEstimator::grpo},
    {"gigpo", AdvEstimator::gigpo},
    {"step_reinforce", AdvEstimator::step_reinforce},
    {"agentic_reinforce", AdvEstimator::agentic_reinforce},
    {"rloo", AdvEstimator::rloo},
};

constexpr std::pair<std::string_view, NormType> kNormTypes[] = {
    {"none", NormType::none}, {"batch", NormType::batch}, {"group", NormType::group}, {"running", NormType::running}};

}  // namespace

AdvEstimator parse_adv_estimator(std::string_view name) {
  for (const auto& [n, e] : kEstimators)
    if (n == name) return e;
  throw Error(fmt::format("adv_estimator '{}' is not known; use one of gae, reinforce, grpo, gigpo, "
                          "step_reinforce, agentic_reinforce, rloo",
                          name));
}

std::string_view to_string(AdvEstimator e) {
  for (const auto& [n, v] : kEstimators)
    if (v == e) return n;
  return "?";
}

NormType parse_norm_type(std::string_view name) {
  for (const auto& [n, t] : kNormTypes)
    if (n == name) return t;
  throw Error(fmt::format("reward normalisation type '{}' is not known; use batch, group, running or "
                          "none (null)",
                          name));
}

std::string_view to_string(NormType t) {
  for (const auto& [n, v] : kNormTypes)
    if (v == t) return n;
  return "?";
}

}  // namespace roll::rl
