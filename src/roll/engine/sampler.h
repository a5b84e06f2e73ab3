#pragma once
// Token selection from a step's logits: repetition penalty, greedy at temperature 0, else
// temperature, top-k, then top-p over the renormalised top-k (vLLM's order), and a draw from a
// counter-based generator keyed by (seed, sample, position), so a sample does not depend on
// which other requests share its steps or on preemption. The log-prob returned is the raw one:
// log_softmax of the unmodified logits, what the training forward computes.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <span>
#include <vector>

#include "roll/core/generation.h"

namespace roll::engine {

struct SampleSpec {
  int64_t row = 0;                      // row of the logits
  const SamplingParams* params = nullptr;
  std::span<const int32_t> context;     // prompt + generated tokens (repetition penalty)
  uint64_t seed = 0;
  int64_t sample_index = 0;             // which of the request's n samples
  int64_t position = 0;                 // index of the token being drawn among the generated ones
};

struct SampledToken {
  int32_t token = 0;
  float logprob = 0;
};

// logits [rows, vocab] fp32 contiguous; one token per spec (specs may share a row).
std::vector<SampledToken> sample_tokens(const at::Tensor& logits, std::span<const SampleSpec> specs);

// The uniform draw in [0, 1) the sampler uses for (seed, sample, position).
double sample_uniform(uint64_t seed, int64_t sample_index, int64_t position);

}  // namespace roll::engine
