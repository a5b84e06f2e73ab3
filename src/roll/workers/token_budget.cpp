#include "roll/workers/token_budget.h"

#include <fmt/format.h>

#include "roll/core/error.h"

namespace roll::workers {
namespace {

std::optional<TokenBudget> token_budget(bool enabled, int64_t max_tokens, int64_t round, const std::string& role,
                                        const std::string& phase) {
  if (!enabled) return std::nullopt;
  const std::string round_key = fmt::format("{}.sequence_length_round_in_{}", role, phase);
  const std::string max_key = fmt::format("{}.max_tokens_per_microbatch_in_{}", role, phase);
  if (round <= 0) throw ConfigError(round_key, fmt::format("{} must be positive, got {}", round_key, round));
  if (max_tokens < round)
    throw ConfigError(max_key, fmt::format("{} = {}: use_dynamic_batching_in_{} needs a token budget of at least "
                                           "sequence_length_round_in_{} ({})",
                                           max_key, max_tokens, phase, phase, round));
  return TokenBudget{max_tokens, round, max_key};
}

}  // namespace

std::optional<TokenBudget> train_token_budget(const config::WorkerConfig& worker, const std::string& role) {
  return token_budget(worker.use_dynamic_batching_in_train, worker.max_tokens_per_microbatch_in_train,
                      worker.sequence_length_round_in_train, role, "train");
}

std::optional<TokenBudget> infer_token_budget(const config::WorkerConfig& worker, const std::string& role) {
  return token_budget(worker.use_dynamic_batching_in_infer, worker.max_tokens_per_microbatch_in_infer.value_or(0),
                      worker.sequence_length_round_in_infer, role, "infer");
}

}  // namespace roll::workers
