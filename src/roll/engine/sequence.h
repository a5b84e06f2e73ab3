#pragma once
// One sample stream of a request as the scheduler and the step see it. A request with n samples
// starts as one sequence that computes the prompt; its first sampling step forks it into n.
#include <cstdint>
#include <vector>

#include "roll/engine/kv_cache_manager.h"

namespace roll::engine {

struct Sequence {
  SeqId id = 0;
  int64_t request = 0;          // key of the owning request in the engine
  int32_t sample_index = 0;     // which of the request's n samples
  int64_t fork_width = 1;       // sequences this becomes at its first sample (n before the fork)
  std::vector<int32_t> tokens;  // prompt, then generated tokens
  int64_t prompt_len = 0;
  int64_t num_computed = 0;     // leading tokens whose K/V sits in the cache
  int64_t num_cached = 0;       // of which came from the prefix cache at the last admission
  std::vector<float> logprobs;  // one per generated token
  std::vector<int64_t> weight_versions;  // one per generated token: the engine's version when sampled

  int64_t num_tokens() const { return static_cast<int64_t>(tokens.size()); }
  int64_t num_generated() const { return num_tokens() - prompt_len; }
};

}  // namespace roll::engine
