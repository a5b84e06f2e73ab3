#pragma once
// ROLL's GeneralRuleRewardWorker, the IFEval rule reward (docs/rewards.md, "ifeval"): the sample's
// ground truth names one instruction check (`func_name`) and its parameters; the score is whether
// the answer passes it. reward_type is not read (ROLL's worker ignores it).
//   answer text  special tokens removed, then the text after the last </think>
//   check        only for samples whose tag is "ifeval"; ground_truth is a JSON object (or a
//                string holding one) {"func_name": ..., <parameters>}; ifeval_checks.h
//   score        1 / 0
//   response-level reward  score + repetition penalty of the whole response (special tokens
//                removed, </think> kept), in float16 as ROLL sums it
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace roll::reward {

enum class IfevalOutcome {
  checked,             // the check ran (passed or not)
  unknown_tag,         // tag is not "ifeval"
  bad_ground_truth,    // not a JSON object
  unknown_function,    // no func_name, or one ROLL does not map
};

struct IfevalResult {
  double score = 0;
  double response_level_reward = 0;  // fp16-rounded
  double repetition_penalty = 0;
  IfevalOutcome outcome = IfevalOutcome::checked;
  std::string func_name;
  std::string error;  // why a 0 that is not a plain failed check (what Python raised, ...)
};

class IfevalReward {
 public:
  IfevalResult score(std::string_view response, const nlohmann::json& ground_truth, std::string_view tag) const;
};

const char* to_string(IfevalOutcome outcome);

}  // namespace roll::reward
