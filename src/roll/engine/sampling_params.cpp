#include "roll/engine/sampling_params.h"

#include <fmt/format.h>

#include <cmath>

#include "roll/config/schema.h"
#include "roll/core/error.h"

namespace roll::engine {

void validate(const SamplingParams& p) {
  if (!std::isfinite(p.temperature) || p.temperature < 0)
    throw Error(fmt::format("temperature must be >= 0 (0 is greedy), got {}", p.temperature));
  if (!(p.top_p > 0.0 && p.top_p <= 1.0)) throw Error(fmt::format("top_p must be in (0, 1], got {}", p.top_p));
  if (p.top_k < -1) throw Error(fmt::format("top_k must be -1 or 0 (off) or at least 1, got {}", p.top_k));
  if (!std::isfinite(p.repetition_penalty) || p.repetition_penalty <= 0)
    throw Error(fmt::format("repetition_penalty must be > 0, got {}", p.repetition_penalty));
  if (p.n < 1) throw Error(fmt::format("n (samples per prompt) must be at least 1, got {}", p.n));
  if (p.max_new_tokens < 1) throw Error(fmt::format("max_new_tokens must be at least 1, got {}", p.max_new_tokens));
  for (const auto& s : p.stop)
    if (s.empty()) throw Error("stop strings must not be empty");
}

SamplingParams sampling_params_from(const config::GeneratingArguments& g, std::vector<int32_t> stop_token_ids) {
  if (g.num_beams > 1) throw NotSupportedError(fmt::format("generating_args.num_beams = {} (beam search)", g.num_beams));
  SamplingParams p;
  p.temperature = g.do_sample ? g.temperature : 0.0;
  p.top_p = g.top_p;
  p.top_k = g.top_k;
  p.repetition_penalty = g.repetition_penalty;
  p.n = g.num_return_sequences;
  p.max_new_tokens = g.max_new_tokens > 0 ? g.max_new_tokens : g.max_length;
  p.stop_token_ids = std::move(stop_token_ids);
  p.stop = g.stop_strings;
  p.include_stop_str_in_output = g.include_stop_str_in_output.value_or(false);
  validate(p);
  return p;
}

}  // namespace roll::engine
