#include "roll/reward/rule/ifeval_reward.h"

#include <nlohmann/json.hpp>

#include "roll/reward/rule/ifeval_checks.h"
#include "roll/reward/rule/rule_shaping.h"

namespace roll::reward {

const char* to_string(IfevalOutcome outcome) {
  switch (outcome) {
    case IfevalOutcome::checked: return "checked";
    case IfevalOutcome::unknown_tag: return "unknown_tag";
    case IfevalOutcome::bad_ground_truth: return "bad_ground_truth";
    case IfevalOutcome::unknown_function: return "unknown_function";
  }
  return "?";
}

IfevalResult IfevalReward::score(std::string_view response, const nlohmann::json& ground_truth,
                                 std::string_view tag) const {
  IfevalResult r;
  const std::string text = rule::without_special_tokens(response);
  r.repetition_penalty = rule::repetition_penalty(text);
  auto finish = [&r] {
    r.response_level_reward = rule::fp16_add(r.score, r.repetition_penalty);
    return r;
  };

  if (tag != "ifeval") {
    r.outcome = IfevalOutcome::unknown_tag;
    r.error = "tag '" + std::string(tag) + "' is not ifeval";
    return finish();
  }
  nlohmann::json constraint = ground_truth;
  if (ground_truth.is_string()) {
    constraint = nlohmann::json::parse(ground_truth.get_ref<const std::string&>(), nullptr, /*allow_exceptions=*/false);
  }
  if (!constraint.is_object()) {
    r.outcome = IfevalOutcome::bad_ground_truth;
    r.error = "ground_truth is not a JSON object";
    return finish();
  }
  auto name = constraint.find("func_name");
  if (name == constraint.end() || !name->is_string() || !is_ifeval_function(name->get_ref<const std::string&>())) {
    r.outcome = IfevalOutcome::unknown_function;
    r.error = name == constraint.end() ? "no func_name" : "func_name " + name->dump() + " is not an IFEval check";
    return finish();
  }
  r.func_name = name->get<std::string>();
  constraint.erase("func_name");
  const IfevalCheckResult check = run_ifeval_check(r.func_name, rule::extract_after_last_think(text), constraint);
  r.score = check.passed ? 1.0 : 0.0;
  r.error = check.error;
  return finish();
}

}  // namespace roll::reward
