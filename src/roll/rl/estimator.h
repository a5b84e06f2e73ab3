#pragma once
// ROLL's `adv_estimator` and reward-normalisation names (docs/config.md, docs/rl.md) as enums. parse_* accept
// exactly ROLL's strings and raise roll::Error naming the bad value and the accepted ones.
#include <string_view>

namespace roll::rl {

// gae..agentic_reinforce are ROLL's; rloo (leave-one-out group baseline) is a rollcpp extension.
enum class AdvEstimator { gae, reinforce, grpo, gigpo, step_reinforce, agentic_reinforce, rloo };
AdvEstimator parse_adv_estimator(std::string_view name);
std::string_view to_string(AdvEstimator e);

// norm_mean_type / norm_std_type. "none" stands for YAML null (`~`).
enum class NormType { none, batch, group, running };
NormType parse_norm_type(std::string_view name);
std::string_view to_string(NormType t);

}  // namespace roll::rl
