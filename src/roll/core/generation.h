#pragma once
// A generate request and its answer as plain data (vLLM V1 style, no callbacks): what pipelines,
// env managers, routers and the infer service exchange, and what the engine consumes and
// produces. Serialisation for the wire is in workers/generate_protocol.h; ROLL's generating_args
// become SamplingParams in config/sampling_params.h.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace roll {

// Per-request sampling settings (vLLM's SamplingParams as ROLL fills them, docs/config.md).
struct SamplingParams {
  double temperature = 1.0;         // 0: greedy
  double top_p = 1.0;               // nucleus mass, in (0, 1]
  int64_t top_k = -1;               // -1 or 0: no top-k
  double repetition_penalty = 1.0;  // > 0; applied to prompt and output tokens (vLLM/HF rule)
  int64_t n = 1;                    // samples of the prompt; they share its K/V blocks
  int64_t max_new_tokens = 16;      // capped at max_model_len - prompt length
  std::optional<uint64_t> seed;     // per-request seed: same seed, same samples
  std::vector<int32_t> stop_token_ids;  // eos and pad as ROLL passes them; kept in the output
  std::vector<std::string> stop;        // stop strings (need the engine's detokenizer)
  bool include_stop_str_in_output = false;
};

// Throws roll::Error naming the bad field.
void validate(const SamplingParams& params);

struct GenerationRequest {
  std::string request_id;
  std::vector<int32_t> prompt_token_ids;
  SamplingParams params;
};

enum class FinishReason { stop, length, abort };
const char* to_string(FinishReason reason);  // "stop" | "length" | "abort"
// The inverse of to_string; throws roll::Error naming `what` on anything else.
FinishReason finish_reason_from(const std::string& name, const std::string& what);

struct SampleOutput {
  std::vector<int32_t> token_ids;  // generated tokens; a stop token id is kept as the last one
  std::vector<float> logprobs;     // raw log-prob of each token: log_softmax of the model's logits
  FinishReason finish_reason = FinishReason::length;
  std::string stop_reason;         // the stop string that matched ("" otherwise)
  std::string text;                // decoded output (only with a detokenizer)
  // One per generated token: the weight version that sampled it. A request preempted by a weight
  // update keeps its older stamps, so the trainer can tell which tokens are off-policy. Last, so
  // positional initialisers of the fields above stay valid; empty from peers that predate it.
  std::vector<int64_t> weight_versions;
};

struct RequestOutput {
  std::string request_id;
  std::vector<int32_t> prompt_token_ids;
  std::vector<SampleOutput> samples;  // params.n of them, in sample order
  int64_t cached_prompt_tokens = 0;   // prompt tokens found in the prefix cache at admission
};

// The answer to a request that never reached an engine: n samples, no tokens, finish reason abort.
RequestOutput aborted_output(const std::string& request_id, int64_t n);

}  // namespace roll
