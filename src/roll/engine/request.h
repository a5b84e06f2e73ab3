#pragma once
// What goes into the engine and what comes out: plain data (vLLM V1 style), no callbacks.
#include <cstdint>
#include <string>
#include <vector>

#include "roll/engine/sampling_params.h"

namespace roll::engine {

struct GenerationRequest {
  std::string request_id;
  std::vector<int32_t> prompt_token_ids;
  SamplingParams params;
};

enum class FinishReason { stop, length, abort };
const char* to_string(FinishReason reason);  // "stop" | "length" | "abort"

struct SampleOutput {
  std::vector<int32_t> token_ids;  // generated tokens; a stop token id is kept as the last one
  std::vector<float> logprobs;     // raw log-prob of each token: log_softmax of the model's logits
  FinishReason finish_reason = FinishReason::length;
  std::string stop_reason;         // the stop string that matched ("" otherwise)
  std::string text;                // decoded output (only with a detokenizer)
};

struct RequestOutput {
  std::string request_id;
  std::vector<int32_t> prompt_token_ids;
  std::vector<SampleOutput> samples;  // params.n of them, in sample order
  int64_t cached_prompt_tokens = 0;   // prompt tokens found in the prefix cache at admission
};

}  // namespace roll::engine
