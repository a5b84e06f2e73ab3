#include "roll/core/generation.h"

#include <fmt/format.h>

#include <cmath>

#include "roll/core/error.h"

namespace roll {

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

const char* to_string(FinishReason r) {
  switch (r) {
    case FinishReason::stop: return "stop";
    case FinishReason::length: return "length";
    case FinishReason::abort: return "abort";
  }
  return "?";
}

FinishReason finish_reason_from(const std::string& name, const std::string& what) {
  if (name == "stop") return FinishReason::stop;
  if (name == "length") return FinishReason::length;
  if (name == "abort") return FinishReason::abort;
  throw Error(fmt::format("{}: unknown finish reason '{}' (stop, length or abort)", what, name));
}

RequestOutput aborted_output(const std::string& request_id, int64_t n) {
  RequestOutput out;
  out.request_id = request_id;
  for (int64_t i = 0; i < n; ++i) out.samples.push_back(SampleOutput{{}, {}, FinishReason::abort, "", "", {}});
  return out;
}

}  // namespace roll
