#include "roll/workers/token_budget.h"

#include <fmt/format.h>

#include "roll/config/token_budget_rule.h"
#include "roll/core/error.h"

namespace roll::workers {
namespace {

std::optional<TokenBudget> token_budget(bool enabled, std::optional<int64_t> max_tokens, int64_t round,
                                        const std::string& role, const std::string& phase) {
  if (!enabled) return std::nullopt;
  // `roll validate` and the driver refuse such a config already (config/derive.cpp); a worker given
  // one directly refuses it by the same rule.
  if (auto p = config::token_budget_problem(role, phase, max_tokens, round)) throw ConfigError(p->key, p->message);
  return TokenBudget{*max_tokens, round, fmt::format("{}.max_tokens_per_microbatch_in_{}", role, phase)};
}

}  // namespace

std::optional<TokenBudget> train_token_budget(const config::WorkerConfig& worker, const std::string& role) {
  return token_budget(worker.use_dynamic_batching_in_train, worker.max_tokens_per_microbatch_in_train,
                      worker.sequence_length_round_in_train, role, "train");
}

std::optional<TokenBudget> infer_token_budget(const config::WorkerConfig& worker, const std::string& role) {
  return token_budget(worker.use_dynamic_batching_in_infer, worker.max_tokens_per_microbatch_in_infer,
                      worker.sequence_length_round_in_infer, role, "infer");
}

}  // namespace roll::workers
