#pragma once
// A role's dynamic-batching budget from its worker config (use_dynamic_batching_in_{train,infer},
// max_tokens_per_microbatch_in_{train,infer}, sequence_length_round_in_{train,infer}); the
// micro-batches themselves are planned in dynamic_micro_batches.h.
#include <cstdint>
#include <optional>
#include <string>

#include "roll/config/worker_config.h"

namespace roll::workers {

struct TokenBudget {
  int64_t max_tokens = 0;      // tokens of a micro-batch once its rows are padded to the longest
  int64_t round = 1;           // that length rounded up to a multiple of this
  std::string max_tokens_key;  // "<role>.max_tokens_per_microbatch_in_train", for errors
};

// The role's budget when it enables dynamic batching, else nullopt. A round that is not positive,
// or a budget below it (ROLL's defaults: 0 for training, unset for inference), is a ConfigError
// naming the key.
std::optional<TokenBudget> train_token_budget(const config::WorkerConfig& worker, const std::string& role);
std::optional<TokenBudget> infer_token_budget(const config::WorkerConfig& worker, const std::string& role);

}  // namespace roll::workers
