#pragma once
// Per-request sampling settings (vLLM's SamplingParams as ROLL fills them from
// GeneratingArguments, spec 2.6) and their validation.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace roll::config {
struct GeneratingArguments;
}

namespace roll::engine {

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

// ROLL's GeneratingArguments -> SamplingParams (do_sample false -> greedy, num_beams > 1 is an
// error: beam search is not implemented), with stop_token_ids = [eos, pad] as ROLL's vLLM path.
SamplingParams sampling_params_from(const config::GeneratingArguments& args, std::vector<int32_t> stop_token_ids);

}  // namespace roll::engine
