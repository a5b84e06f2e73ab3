#pragma once
// Partial rollout (ROLL's collect_unfinished, docs/pipelines.md "Asynchronous generation"): a
// sample cut off by an abort before a model update keeps its tokens, log-probs and weight
// versions, and goes on after the update as a new request whose prompt is the original prompt plus
// those tokens, with the remaining token budget. The continuation's output is appended, so the
// finished sample is one sequence whose tokens carry the version of the weights that sampled each.
#include <cstdint>
#include <optional>
#include <string>

#include "roll/core/generation.h"

namespace roll::pipeline {

// True when the sample stopped for an abort (it has more to generate).
bool is_unfinished(const SampleOutput& sample);

// The request that continues sample `index` of `original`'s answer (`partial`, tokens so far): the
// original prompt + partial tokens, one sample, max_new_tokens what is left of the original's
// (also capped by sequence_length), a seed of its own per attempt. nullopt when nothing is left
// to generate: the caller ends the sample with finish reason length.
std::optional<GenerationRequest> continuation_request(const GenerationRequest& original, const SampleOutput& partial,
                                                      int64_t index, int64_t attempt, int64_t sequence_length,
                                                      const std::string& request_id);

// Appends `more` (the continuation's one sample) to `into`: tokens, log-probs and weight versions;
// the finish reason and stop string are the continuation's.
void append_continuation(SampleOutput& into, const SampleOutput& more);

}  // namespace roll::pipeline
