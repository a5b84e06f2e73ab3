#pragma once
// Finished generations -> the training Batch (docs/pipelines.md postprocess_generate, 1.8 layout):
//   input_ids, attention_mask, position_ids, response_mask, prompt_mask  [B·n, S], right padded:
//     prompt tokens (left padding removed) then the response, cut at S;
//   prompts [B·n, prompt_length] (as collated, left padded), responses [B·n, S − prompt_length];
//   infer_logprobs [B·n, S−1]: the engine's log-prob of response token k at column prompt_len − 1 + k;
//   infer_weight_versions [B·n, S−1]: the weight version that sampled that token, at the same
//     column (−1 where there is no token or the engine sent no stamps);
//   every prompt column repeated per sample, plus prompt_text, response_text (special tokens kept),
//   finish_reason, sample_uuid and prompt_id (the prompt's row).
#include <cstdint>
#include <vector>

#include "roll/core/batch.h"
#include "roll/core/generation.h"

namespace roll::model {
class Tokenizer;
}

namespace roll::pipeline {

struct GeneratedPrompt {
  std::vector<int32_t> prompt;               // unpadded prompt ids
  std::vector<SampleOutput> samples;  // n of them
};

Batch build_rollout_batch(const Batch& prompts, const std::vector<GeneratedPrompt>& generated, int64_t sequence_length,
                          int64_t prompt_length, int32_t pad_id, const model::Tokenizer& tokenizer);

// Sets prompt_id (row / n) and sample_uuid ("<prompt>-<sample>") of rows that hold n samples per
// prompt, as build_rollout_batch numbers them, after prompts from several rounds were joined.
void number_prompts(Batch& samples, int64_t n);

// Concatenates the batches of several domains: each domain's rows carry their own columns
// (ground_truth for math, test_cases for code); a column missing from a part is filled with null.
Batch concat_domains(std::vector<Batch> parts);

}  // namespace roll::pipeline
