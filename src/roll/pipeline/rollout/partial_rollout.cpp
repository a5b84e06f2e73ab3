#include "roll/pipeline/rollout/partial_rollout.h"

#include <algorithm>

namespace roll::pipeline {

bool is_unfinished(const SampleOutput& sample) { return sample.finish_reason == FinishReason::abort; }

std::optional<GenerationRequest> continuation_request(const GenerationRequest& original, const SampleOutput& partial,
                                                      int64_t index, int64_t attempt, int64_t sequence_length,
                                                      const std::string& request_id) {
  const auto have = static_cast<int64_t>(partial.token_ids.size());
  const int64_t prompt_len = static_cast<int64_t>(original.prompt_token_ids.size()) + have;
  const int64_t left = std::min(original.params.max_new_tokens - have, sequence_length - prompt_len);
  if (left <= 0) return std::nullopt;
  GenerationRequest r;
  r.request_id = request_id;
  r.prompt_token_ids = original.prompt_token_ids;
  r.prompt_token_ids.insert(r.prompt_token_ids.end(), partial.token_ids.begin(), partial.token_ids.end());
  r.params = original.params;
  r.params.n = 1;
  r.params.max_new_tokens = left;
  // Another stream per sample and attempt: a continuation must not replay the first sample's draws.
  if (original.params.seed)
    r.params.seed = *original.params.seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(attempt + 1) +
                    static_cast<uint64_t>(index) * 7919u;
  return r;
}

void append_continuation(SampleOutput& into, const SampleOutput& more) {
  // An answer without stamps (an older peer) must not misalign the versions of later tokens.
  const bool versions = into.weight_versions.size() == into.token_ids.size() &&
                        more.weight_versions.size() == more.token_ids.size();
  into.token_ids.insert(into.token_ids.end(), more.token_ids.begin(), more.token_ids.end());
  into.logprobs.insert(into.logprobs.end(), more.logprobs.begin(), more.logprobs.end());
  if (versions) into.weight_versions.insert(into.weight_versions.end(), more.weight_versions.begin(), more.weight_versions.end());
  else into.weight_versions.clear();
  into.finish_reason = more.finish_reason;
  into.stop_reason = more.stop_reason;
  into.text += more.text;
}

}  // namespace roll::pipeline
