#pragma once
// Whether a sequence is done after its newest token: a stop token id, a stop string in the
// decoded output, or the token limit (max_new_tokens, already capped by max_model_len).
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "roll/core/generation.h"
#include "roll/engine/sequence.h"

namespace roll::engine {

using Detokenizer = std::function<std::string(std::span<const int32_t>)>;

struct StopDecision {
  FinishReason reason = FinishReason::stop;
  std::string stop_string;  // the stop string that matched
};

std::optional<StopDecision> check_stop(const Sequence& seq, const SamplingParams& params, int64_t max_new_tokens,
                                       const Detokenizer& detokenize);

// The decoded output of a finished sequence, cut at its stop string as vLLM does (kept when
// include_stop_str_in_output). Empty without a detokenizer.
std::string output_text(const Sequence& seq, const SamplingParams& params, const std::string& stop_string,
                        const Detokenizer& detokenize);

}  // namespace roll::engine
