#include "roll/config/token_budget_rule.h"

#include <fmt/format.h>

namespace roll::config {

std::optional<TokenBudgetProblem> token_budget_problem(const std::string& role, const std::string& phase,
                                                       std::optional<int64_t> max_tokens, int64_t round) {
  if (round <= 0)
    return TokenBudgetProblem{role + ".sequence_length_round_in_" + phase,
                              fmt::format("use_dynamic_batching_in_{} needs a positive sequence_length_round_in_{}, got {}",
                                          phase, phase, round)};
  if (max_tokens.value_or(0) < round)
    return TokenBudgetProblem{role + ".max_tokens_per_microbatch_in_" + phase,
                              fmt::format("use_dynamic_batching_in_{} needs a token budget of at least "
                                          "sequence_length_round_in_{} ({}), got {}",
                                          phase, phase, round, max_tokens ? std::to_string(*max_tokens) : "none")};
  return std::nullopt;
}

}  // namespace roll::config
