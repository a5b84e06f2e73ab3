// Partial rollout on the real engine (docs/pipelines.md "Asynchronous generation"): a sampled
// request aborted part way, then a weight update, then each sample's continuation request: the
// merged sample is one sequence of the original length budget whose first tokens carry the old
// version and the log-probs of the old weights, and whose later tokens carry the new version and
// the log-probs of the new weights, each as the plain training forward computes them.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "roll/engine/engine_core.h"
#include "roll/model/model_init.h"
#include "roll/model/transformer.h"
#include "roll/pipeline/rollout/partial_rollout.h"

namespace roll::pipeline {
namespace {

model::ModelConfig tiny() {
  model::ModelConfig c = model::preset_config("tiny", "qwen2");
  c.vocab_size = 384;
  c.max_position_embeddings = 256;
  return c;
}

// log p(token t | tokens < t) under `m` for positions [from, to) of `ids`.
at::Tensor forward_log_probs(const model::Transformer& m, const std::vector<int32_t>& ids, int64_t from, int64_t to) {
  at::NoGradGuard g;
  const auto T = static_cast<int64_t>(ids.size());
  at::Tensor t = at::tensor(std::vector<int64_t>(ids.begin(), ids.end()), at::kLong).unsqueeze(0);
  at::Tensor lp = m.token_log_probs(t, at::ones_like(t), at::arange(T, at::kLong).unsqueeze(0)).log_probs[0];
  return lp.slice(0, from - 1, to - 1);  // log_probs[k] scores token k + 1
}

TEST(PipelinePartialRollout, AResumedRequestAfterAWeightUpdateIsOneSequenceWithItsVersions) {
  auto model = model::Transformer::random(tiny(), at::kFloat, 5, 0.1);
  // The engine computes from `model`'s tensors and the update writes into them: the reference for
  // the old weights is a second model from the same seed.
  auto old_weights = model::Transformer::random(tiny(), at::kFloat, 5, 0.1);
  auto updated = model::Transformer::random(tiny(), at::kFloat, 6, 0.1);
  engine::EngineConfig ec;
  ec.block_size = 4;
  ec.num_blocks = 256;
  ec.max_model_len = 64;
  ec.warm_up = false;
  engine::EngineCore engine(model, ec);

  GenerationRequest original;
  original.request_id = "p";
  original.prompt_token_ids = {5, 17, 33, 2, 90, 41, 7};
  original.params.temperature = 1.0;
  original.params.n = 2;
  original.params.max_new_tokens = 12;
  original.params.seed = 11;
  engine.add_request(original);
  const int64_t before = 5;
  for (int64_t i = 0; i < before; ++i) engine.step();  // one token per sample per step
  auto partial = engine.abort("p");
  ASSERT_TRUE(partial.has_value());
  ASSERT_EQ(partial->samples.size(), 2u);

  // The model update between the pause and the resume.
  model::NamedTensors weights;
  for (const auto& [name, t] : updated->named_parameters()) weights.emplace_back(name, t.clone());
  engine.set_weight_version(1);
  engine.update_weights(weights);

  for (size_t j = 0; j < partial->samples.size(); ++j) {
    SampleOutput s = partial->samples[j];
    ASSERT_TRUE(is_unfinished(s));
    ASSERT_EQ(static_cast<int64_t>(s.token_ids.size()), before);
    auto next = continuation_request(original, s, static_cast<int64_t>(j), 1, 64, "p-c1-" + std::to_string(j));
    ASSERT_TRUE(next.has_value());
    EXPECT_EQ(next->params.n, 1);
    EXPECT_EQ(next->params.max_new_tokens, 12 - before);
    EXPECT_EQ(next->prompt_token_ids.size(), original.prompt_token_ids.size() + before);
    auto more = engine.generate({*next})[0];
    ASSERT_EQ(more.samples.size(), 1u);
    append_continuation(s, more.samples[0]);

    const auto total = static_cast<int64_t>(s.token_ids.size());
    EXPECT_LE(total, 12);
    EXPECT_GT(total, before);
    ASSERT_EQ(static_cast<int64_t>(s.logprobs.size()), total);
    ASSERT_EQ(static_cast<int64_t>(s.weight_versions.size()), total);
    for (int64_t k = 0; k < total; ++k) EXPECT_EQ(s.weight_versions[k], k < before ? 0 : 1) << "token " << k;
    EXPECT_NE(s.finish_reason, FinishReason::abort);

    std::vector<int32_t> whole = original.prompt_token_ids;
    whole.insert(whole.end(), s.token_ids.begin(), s.token_ids.end());
    const auto P = static_cast<int64_t>(original.prompt_token_ids.size());
    const at::Tensor got = at::tensor(s.logprobs);
    // The paged fp32 forward against the plain one: ~16 fp32 reductions of <= 64 terms in quadrature,
    // sqrt(16) * sqrt(64) * eps ~ 4e-6 relative on |log p| <~ 7 (as EngineCore's log-prob test).
    const at::Tensor old_part = forward_log_probs(*old_weights, whole, P, P + before);
    const at::Tensor new_part = forward_log_probs(*updated, whole, P + before, P + total);
    EXPECT_LT((got.slice(0, 0, before) - old_part).abs().max().item<float>(), 1e-4) << "sample " << j;
    EXPECT_LT((got.slice(0, before) - new_part).abs().max().item<float>(), 1e-4) << "sample " << j;
    // And the new part is not what the old weights would give.
    const at::Tensor stale = forward_log_probs(*old_weights, whole, P + before, P + total);
    EXPECT_GT((got.slice(0, before) - stale).abs().max().item<float>(), 1e-2) << "sample " << j;
  }
}

TEST(PipelinePartialRollout, NothingLeftToGenerateEndsTheSample) {
  GenerationRequest original;
  original.prompt_token_ids = {1, 2, 3};
  original.params.max_new_tokens = 4;
  SampleOutput s;
  s.token_ids = {7, 8, 9, 10};
  s.finish_reason = FinishReason::abort;
  EXPECT_FALSE(continuation_request(original, s, 0, 1, 64, "x")) << "the token budget is used up";
  s.token_ids = {7, 8};
  EXPECT_FALSE(continuation_request(original, s, 0, 1, 5, "x")) << "sequence_length is reached";
  auto r = continuation_request(original, s, 0, 1, 6, "x");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->params.max_new_tokens, 1) << "capped by sequence_length";
}

}  // namespace
}  // namespace roll::pipeline
