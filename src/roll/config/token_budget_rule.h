#pragma once
// The one rule for a dynamic-batching budget (docs/workers.md): sequence_length_round_in_<phase> is
// positive and max_tokens_per_microbatch_in_<phase> holds one rounded sequence. `roll validate`
// reports a breach among the config's errors; a worker building its budget throws it.
#include <cstdint>
#include <optional>
#include <string>

namespace roll::config {

struct TokenBudgetProblem {
  std::string key;  // "<role>.sequence_length_round_in_train", "<role>.max_tokens_per_microbatch_in_infer"
  std::string message;
};

// `phase`: "train" or "infer"; `max_tokens`: nullopt when the key is unset (ROLL's default for infer).
std::optional<TokenBudgetProblem> token_budget_problem(const std::string& role, const std::string& phase,
                                                       std::optional<int64_t> max_tokens, int64_t round);

}  // namespace roll::config
