// The inference engine on small random models with peaked logits:
// greedy outputs equal greedy decoding with the plain model forward (no cache) under prefix
// caching, chunked prefill and forced preemption; sampled log-probs equal the training forward's;
// n samples share prompt blocks; weight updates never reuse stale blocks; tokens carry the weight
// version that sampled them; bad requests fail alone.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "roll/core/error.h"
#include "roll/engine/engine_core.h"
#include "roll/model/model_init.h"
#include "roll/model/transformer.h"

using namespace roll;
using namespace roll::engine;
using roll::model::Transformer;

namespace {

model::ModelConfig test_config() {
  model::ModelConfig c = model::preset_config("tiny", "qwen2");  // 2 layers, 4 heads, 2 kv heads
  c.vocab_size = 384;
  c.max_position_embeddings = 256;
  return c;
}

std::shared_ptr<Transformer> peaked_model(uint64_t seed = 3, double init_std = 0.8) {
  return Transformer::random(test_config(), at::kFloat, seed, init_std);
}

std::vector<int32_t> random_tokens(int64_t n, uint64_t seed, int64_t vocab = 384) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  at::Tensor t = at::randint(0, vocab, {n}, g, at::kLong);
  return std::vector<int32_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + n);
}

// The training forward's log-probs [generated] of a sample's tokens after its prompt.
at::Tensor training_log_probs(const Transformer& model, const std::vector<int32_t>& prompt,
                              const std::vector<int32_t>& generated) {
  std::vector<int64_t> ids(prompt.begin(), prompt.end());
  ids.insert(ids.end(), generated.begin(), generated.end());
  const int64_t T = static_cast<int64_t>(ids.size()), P = static_cast<int64_t>(prompt.size());
  at::Tensor t = at::tensor(ids, at::kLong).unsqueeze(0);
  return model.token_log_probs(t, at::ones_like(t), at::arange(T, at::kLong).unsqueeze(0)).log_probs[0].slice(0, P - 1, T - 1);
}

// Greedy decoding with the plain forward over the whole sequence each step (no cache at all).
std::vector<int32_t> reference_greedy(const Transformer& m, std::vector<int32_t> ids, int64_t new_tokens) {
  at::NoGradGuard g;
  std::vector<int32_t> out;
  for (int64_t i = 0; i < new_tokens; ++i) {
    const int64_t T = static_cast<int64_t>(ids.size());
    at::Tensor t = at::tensor(std::vector<int64_t>(ids.begin(), ids.end()), at::kLong).unsqueeze(0);
    at::Tensor logits = m.logits(t, at::ones_like(t), at::arange(T, at::kLong).unsqueeze(0))[0][T - 1];
    const int32_t tok = static_cast<int32_t>(logits.argmax().item<int64_t>());
    out.push_back(tok);
    ids.push_back(tok);
  }
  return out;
}

EngineConfig small_engine(int64_t num_blocks = 256) {
  EngineConfig c;
  c.block_size = 4;
  c.num_blocks = num_blocks;
  c.max_model_len = 64;
  c.warm_up = false;
  return c;
}

// Prompts of mixed lengths; some share long prefixes (prefix-cache hits across requests).
std::vector<std::vector<int32_t>> mixed_prompts() {
  std::vector<std::vector<int32_t>> p;
  for (int64_t n : {1, 3, 4, 5, 9, 16, 17, 30}) p.push_back(random_tokens(n, 100 + n));
  auto shared = random_tokens(13, 7);
  for (int64_t extra : {0, 2, 5}) {
    auto q = shared;
    auto tail = random_tokens(extra, 200 + extra);
    q.insert(q.end(), tail.begin(), tail.end());
    p.push_back(q);
  }
  p.push_back(p[4]);  // a repeat of a first-wave prompt: cached but for its last block
  return p;
}

GenerationRequest greedy_request(const std::string& id, std::vector<int32_t> prompt, int64_t max_new) {
  GenerationRequest r;
  r.request_id = id;
  r.prompt_token_ids = std::move(prompt);
  r.params.temperature = 0;
  r.params.max_new_tokens = max_new;
  return r;
}

struct GreedyCase {
  const char* name;
  bool prefix_caching;
  int64_t max_num_batched_tokens;
  int64_t num_blocks;
  bool expect_preemption;
};

}  // namespace

class EngineCoreGreedy : public ::testing::TestWithParam<GreedyCase> {};

TEST_P(EngineCoreGreedy, TokenIdenticalToPlainForward) {
  const GreedyCase& gc = GetParam();
  auto model = peaked_model();
  EngineConfig cfg = small_engine(gc.num_blocks);
  cfg.enable_prefix_caching = gc.prefix_caching;
  cfg.max_num_batched_tokens = gc.max_num_batched_tokens;
  cfg.max_model_len = std::min<int64_t>(64, gc.num_blocks * cfg.block_size);
  EngineCore engine(model, cfg);
  const auto prompts = mixed_prompts();
  const int64_t max_new = 12;
  // Half now, half after a few steps: requests join a running batch.
  for (size_t i = 0; i < prompts.size() / 2; ++i)
    engine.add_request(greedy_request("r" + std::to_string(i), prompts[i], max_new));
  for (int i = 0; i < 3; ++i) engine.step();
  for (size_t i = prompts.size() / 2; i < prompts.size(); ++i)
    engine.add_request(greedy_request("r" + std::to_string(i), prompts[i], max_new));
  std::map<std::string, RequestOutput> outs;
  for (int guard = 0; engine.has_unfinished() && guard < 10000; ++guard) {
    engine.step();
    for (auto& o : engine.outputs()) outs.emplace(o.request_id, std::move(o));
  }
  ASSERT_EQ(outs.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    const RequestOutput& o = outs.at("r" + std::to_string(i));
    ASSERT_EQ(o.samples.size(), 1u);
    EXPECT_EQ(o.samples[0].token_ids, reference_greedy(*model, prompts[i], max_new)) << gc.name << " prompt " << i;
    EXPECT_EQ(o.samples[0].finish_reason, FinishReason::length);
    EXPECT_EQ(o.samples[0].logprobs.size(), static_cast<size_t>(max_new));
  }
  const KvCacheStats st = engine.cache_stats();
  if (gc.prefix_caching) {
    EXPECT_GT(st.prefix_hit_tokens, 0) << gc.name;
  } else {
    EXPECT_EQ(st.prefix_hit_tokens, 0) << gc.name;
  }
  if (gc.expect_preemption) {
    EXPECT_GT(engine.num_preemptions(), 0) << gc.name;
  }
  EXPECT_EQ(st.free_blocks, st.num_blocks) << "every block is released at the end";
}

INSTANTIATE_TEST_SUITE_P(
    EngineCore, EngineCoreGreedy,
    ::testing::Values(GreedyCase{"prefix_cache", true, 8192, 256, false},
                      GreedyCase{"no_prefix_cache", false, 8192, 256, false},
                      GreedyCase{"chunked_prefill", true, 7, 256, false},
                      GreedyCase{"chunked_prefill_no_cache", false, 5, 256, false},
                      GreedyCase{"preemption_tiny_cache", true, 8192, 12, true},
                      GreedyCase{"preemption_chunked_no_cache", false, 6, 12, true}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(EngineCore, SampledLogProbsEqualTrainingForward) {
  auto model = Transformer::random(test_config(), at::kFloat, 5, 0.1);  // flat enough to sample varied tokens
  EngineCore engine(model, small_engine());
  std::vector<GenerationRequest> reqs;
  const std::vector<double> temps{0.0, 0.5, 1.0, 1.7};
  for (size_t i = 0; i < temps.size(); ++i) {
    GenerationRequest r;
    r.request_id = "t" + std::to_string(i);
    r.prompt_token_ids = random_tokens(5 + 3 * i, 40 + i);
    r.params.temperature = temps[i];
    r.params.top_k = i == 2 ? 20 : -1;
    r.params.top_p = i == 3 ? 0.9 : 1.0;
    r.params.repetition_penalty = i == 1 ? 1.3 : 1.0;
    r.params.n = 2;
    r.params.max_new_tokens = 10;
    r.params.seed = 11 + i;
    reqs.push_back(r);
  }
  auto outs = engine.generate(reqs);
  at::NoGradGuard g;
  std::set<int32_t> distinct;
  for (size_t i = 0; i < outs.size(); ++i)
    for (const auto& s : outs[i].samples) {
      distinct.insert(s.token_ids.begin(), s.token_ids.end());
      at::Tensor train = training_log_probs(*model, reqs[i].prompt_token_ids, s.token_ids);
      at::Tensor infer = at::tensor(s.logprobs);
      ASSERT_EQ(train.numel(), infer.numel());
      // The engine's paged fp32 forward vs the padded one: ~16 fp32 reductions of ~64 terms in quadrature,
      // √16·√64·eps ≈ 4e-6 relative, on |log p| ≲ 7.
      EXPECT_LT((train - infer).abs().max().item<float>(), 1e-4) << "temperature " << temps[i];
    }
  EXPECT_GT(distinct.size(), 20u) << "sampling should not collapse to a few tokens";
}

// The bf16 engine (its products round each input row to bf16 once and accumulate in fp32) against
// the fp32 training forward over the same bf16 weights widened: the only difference is that
// rounding, relative u = 2^-9 on each product input. A product's error is then at most
// u * sum |x_i w_i|; over the 2 layers' 7 products and the LM head, with the residual stream
// carrying it forward, a logit moves by a few u * (L + 1) times its scale, and a log-prob by at
// most twice the largest logit move: 2 * 8 * u * 3 ~ 0.1 at logit scale 1. The ratio ROLL reports,
// exp(train - infer), then stays within a few percent of 1 on every token.
TEST(EngineCore, Bf16SampledLogProbsAgreeWithTheTrainingForward) {
  auto bf16 = Transformer::random(test_config(), at::kBFloat16, 5, 0.1);
  auto fp32 = Transformer::random(test_config(), at::kFloat, 5, 0.1);
  {
    at::NoGradGuard g;
    for (const auto& [name, t] : fp32->named_parameters()) t.copy_(bf16->parameter(name).to(at::kFloat));
  }
  EngineCore engine(bf16, small_engine());
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 3; ++i) {
    GenerationRequest r;
    r.request_id = "b" + std::to_string(i);
    r.prompt_token_ids = random_tokens(6 + 5 * i, 70 + i);
    r.params.temperature = 1.0;
    r.params.n = 2;
    r.params.max_new_tokens = 12;
    r.params.seed = 3 + i;
    reqs.push_back(r);
  }
  auto outs = engine.generate(reqs);
  at::NoGradGuard g;
  const double u = std::ldexp(1.0, -9), layers = 2, bound = 2 * 8 * u * (layers + 1);
  double worst = 0;
  for (size_t i = 0; i < outs.size(); ++i)
    for (const auto& s : outs[i].samples) {
      at::Tensor train = training_log_probs(*fp32, reqs[i].prompt_token_ids, s.token_ids).to(at::kDouble);
      at::Tensor infer = at::tensor(s.logprobs).to(at::kDouble);
      ASSERT_EQ(train.numel(), infer.numel());
      worst = std::max(worst, (train - infer).abs().max().item<double>());
      at::Tensor ratio = at::exp(train - infer);
      EXPECT_LT((ratio - 1).abs().max().item<double>(), std::exp(bound) - 1) << "request " << i;
    }
  EXPECT_LT(worst, bound);
  EXPECT_GT(worst, 0.0) << "bf16 products that agree bit for bit with fp32 ones are not rounding their inputs";
}

TEST(EngineCore, StepStatsSplitTheForwardByPhase) {
  EngineCore engine(Transformer::random(test_config(), at::kFloat, 2, 0.1), small_engine());
  GenerationRequest r;
  r.request_id = "p";
  r.prompt_token_ids = random_tokens(20, 4);
  r.params.max_new_tokens = 3;
  engine.add_request(r);
  while (engine.has_unfinished()) {
    const StepStats st = engine.step();
    double phases = 0;
    for (double s : st.forward_phases.seconds) {
      EXPECT_GE(s, 0.0);
      phases += s;
    }
    EXPECT_LE(phases, st.forward_s) << "the phases are parts of the forward";
    for (StepPhase p : {StepPhase::qkv, StepPhase::attention, StepPhase::gate_up, StepPhase::down, StepPhase::lm_head})
      EXPECT_GT(st.forward_phases[p], 0.0) << step_phase_name(p);
    EXPECT_LE(st.draw_s, st.sample_s) << "the sampler is part of output processing";
  }
}

TEST(EngineCore, SamplesShareThePromptBlocks) {
  auto model = peaked_model();
  for (bool prefix : {false, true}) {
    EngineConfig cfg = small_engine();
    cfg.enable_prefix_caching = prefix;
    EngineCore engine(model, cfg);
    GenerationRequest r;
    r.request_id = "n8";
    r.prompt_token_ids = random_tokens(4 * 4 + 3, 9);  // 4 full blocks and a partial one
    r.params.n = 8;
    r.params.temperature = 1.0;
    r.params.max_new_tokens = 2;
    r.params.seed = 1;
    auto out = engine.generate({r})[0];
    ASSERT_EQ(out.samples.size(), 8u);
    const KvCacheStats st = engine.cache_stats();
    // The prompt's 5 blocks once, then one private copy of the shared partial block for 7 of the 8
    // samples (the last writer owns it alone); 8 separate prompts would have taken 40 blocks.
    EXPECT_EQ(st.blocks_allocated, 5 + 7) << "prefix caching " << prefix;
    EXPECT_EQ(st.cow_copies, 7);
    std::set<std::vector<int32_t>> distinct;
    for (const auto& s : out.samples) distinct.insert(s.token_ids);
    EXPECT_GT(distinct.size(), 1u);
  }
  // Greedy n = 8: every sample continues from the shared/copied blocks exactly as a lone request.
  EngineCore engine(model, small_engine());
  auto prompt = random_tokens(4 * 4 + 3, 10);
  GenerationRequest r = greedy_request("g8", prompt, 9);
  r.params.n = 8;
  auto out = engine.generate({r})[0];
  const auto ref = reference_greedy(*model, prompt, 9);
  for (const auto& s : out.samples) EXPECT_EQ(s.token_ids, ref);
}

TEST(EngineCore, SameSeedSameSamplesRegardlessOfBatch) {
  auto model = Transformer::random(test_config(), at::kFloat, 5, 0.1);
  auto make = [](const std::string& id, uint64_t seed) {
    GenerationRequest r;
    r.request_id = id;
    r.prompt_token_ids = random_tokens(7, 3);
    r.params.temperature = 1.0;
    r.params.n = 3;
    r.params.max_new_tokens = 8;
    r.params.seed = seed;
    return r;
  };
  EngineConfig tiny = small_engine(10);
  tiny.max_model_len = 40;
  EngineCore a(model, small_engine()), b(model, tiny);
  auto alone = a.generate({make("x", 42)})[0];
  // In a crowd, in a tiny cache that preempts, the same seed draws the same tokens.
  std::vector<GenerationRequest> crowd;
  for (int i = 0; i < 5; ++i) crowd.push_back(make("c" + std::to_string(i), 100 + i));
  crowd.push_back(make("x", 42));
  auto outs = b.generate(crowd);
  for (int s = 0; s < 3; ++s) EXPECT_EQ(outs.back().samples[s].token_ids, alone.samples[s].token_ids);
  EXPECT_NE(outs[0].samples[0].token_ids, alone.samples[0].token_ids);
}

TEST(EngineCore, UpdateWeightsNeverReusesStalePrefixBlocks) {
  auto model = peaked_model(3);
  auto other = peaked_model(4);
  EngineCore engine(model, small_engine());
  auto prompt = random_tokens(21, 5);
  auto first = engine.generate({greedy_request("a", prompt, 6)})[0];
  auto again = engine.generate({greedy_request("b", prompt, 6)})[0];
  EXPECT_EQ(again.cached_prompt_tokens, 20) << "the repeat hits the prefix cache";
  // A request in flight during the update is recomputed under the new weights.
  engine.add_request(greedy_request("c", prompt, 6));
  engine.step();
  engine.update_weights(other->named_parameters());
  const int64_t hits_before = engine.cache_stats().prefix_hit_tokens;
  auto after = engine.generate({greedy_request("d", prompt, 6)})[0];
  std::map<std::string, RequestOutput> rest;
  for (auto& o : engine.outputs()) rest.emplace(o.request_id, o);
  EXPECT_EQ(after.cached_prompt_tokens, 0);
  const auto ref_new = reference_greedy(*other, prompt, 6);
  EXPECT_EQ(after.samples[0].token_ids, ref_new);
  EXPECT_NE(ref_new, first.samples[0].token_ids);
  EXPECT_EQ(engine.cache_stats().prefix_hit_tokens, hits_before) << "no block from before the update is reused";
  // "c" had one token from the old weights; the rest were computed (from scratch) with the new ones.
  ASSERT_TRUE(rest.count("c"));
  const auto& c = rest.at("c").samples[0].token_ids;
  EXPECT_EQ(c[0], first.samples[0].token_ids[0]);
  auto c_prompt = prompt;
  c_prompt.push_back(c[0]);
  EXPECT_EQ(std::vector<int32_t>(c.begin() + 1, c.end()), reference_greedy(*other, c_prompt, 5));
}

TEST(EngineCore, TokensCarryTheWeightVersionThatSampledThem) {
  auto model = peaked_model();
  EngineCore engine(model, small_engine());
  EXPECT_EQ(engine.weight_version(), 0) << "the weights it was loaded with";
  const auto prompt = random_tokens(9, 21);
  const int64_t max_new = 10, before = 4;
  engine.add_request(greedy_request("g", prompt, max_new));
  GenerationRequest sampled = greedy_request("n", random_tokens(6, 22), max_new);
  sampled.params.temperature = 1.0;
  sampled.params.n = 3;
  sampled.params.seed = 7;
  engine.add_request(sampled);
  for (int i = 0; i < before; ++i) engine.step();  // one token per sample per step
  // The same weights under a new version: the running requests are preempted and recomputed, so
  // their tokens are unchanged but the ones sampled from here on carry the new version.
  model::NamedTensors same;
  for (const auto& [name, t] : model->named_parameters()) same.emplace_back(name, t.clone());
  engine.set_weight_version(3);
  engine.update_weights(same);
  EXPECT_EQ(engine.weight_version(), 3);
  std::map<std::string, RequestOutput> outs;
  for (int guard = 0; engine.has_unfinished() && guard < 1000; ++guard) {
    engine.step();
    for (auto& o : engine.outputs()) outs.emplace(o.request_id, std::move(o));
  }
  const std::vector<int64_t> expected{0, 0, 0, 0, 3, 3, 3, 3, 3, 3};
  ASSERT_TRUE(outs.count("g") && outs.count("n"));
  const SampleOutput& g = outs.at("g").samples[0];
  EXPECT_EQ(g.token_ids, reference_greedy(*model, prompt, max_new));
  EXPECT_EQ(g.weight_versions, expected);
  EXPECT_EQ(g.logprobs.size(), g.weight_versions.size());
  ASSERT_EQ(outs.at("n").samples.size(), 3u);
  for (const SampleOutput& s : outs.at("n").samples) {
    EXPECT_EQ(s.token_ids.size(), s.weight_versions.size());
    EXPECT_EQ(s.weight_versions, expected) << "forked samples keep their stamps through the update";
  }

  // Between generate calls: every token of a later request carries the new version.
  const auto later = engine.generate({greedy_request("later", prompt, 3)})[0].samples[0];
  EXPECT_EQ(later.weight_versions, (std::vector<int64_t>{3, 3, 3}));

  // A version change alone stamps the next token, and an abort's partial output keeps the stamps.
  engine.add_request(greedy_request("cut", prompt, 20));
  engine.step();
  engine.step();
  engine.set_weight_version(5);
  engine.step();
  const auto cut = engine.abort("cut");
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(cut->samples[0].weight_versions, (std::vector<int64_t>{3, 3, 5}));
  EXPECT_EQ(cut->samples[0].token_ids.size(), 3u);
}

TEST(EngineCore, BadRequestsFailAloneAndTheEngineKeepsServing) {
  auto model = peaked_model();
  EngineCore engine(model, small_engine());
  auto good = random_tokens(6, 1);
  engine.add_request(greedy_request("before", good, 5));
  auto bad = [&](GenerationRequest r, const char* what) {
    EXPECT_THROW(engine.add_request(r), roll::Error) << what;
  };
  bad(greedy_request("empty", {}, 5), "empty prompt");
  bad(greedy_request("long", random_tokens(64, 2), 5), "prompt of max_model_len tokens");
  bad(greedy_request("neg", {1, -1, 2}, 5), "negative token id");
  bad(greedy_request("oov", {1, 384, 2}, 5), "token id == vocab size");
  auto r = greedy_request("n0", good, 5);
  r.params.n = 0;
  bad(r, "n = 0");
  r = greedy_request("p0", good, 5);
  r.params.top_p = 0;
  bad(r, "top_p = 0");
  r.params.top_p = 1.5;
  bad(r, "top_p > 1");
  r = greedy_request("t", good, 5);
  r.params.temperature = -0.5;
  bad(r, "negative temperature");
  r = greedy_request("m", good, 0);
  bad(r, "max_new_tokens = 0");
  bad(greedy_request("before", good, 5), "duplicate request id");
  try {
    engine.add_request(greedy_request("oov2", {1, 999}, 5));
  } catch (const roll::Error& e) {
    EXPECT_NE(std::string(e.what()).find("oov2"), std::string::npos) << "the error names the request";
    EXPECT_NE(std::string(e.what()).find("999"), std::string::npos) << "and the bad token";
  }
  engine.add_request(greedy_request("after", good, 5));
  std::map<std::string, RequestOutput> outs;
  while (engine.has_unfinished()) {
    engine.step();
    for (auto& o : engine.outputs()) outs.emplace(o.request_id, o);
  }
  ASSERT_EQ(outs.size(), 2u);
  const auto ref = reference_greedy(*model, good, 5);
  EXPECT_EQ(outs.at("before").samples[0].token_ids, ref);
  EXPECT_EQ(outs.at("after").samples[0].token_ids, ref);
}

TEST(EngineCore, AbortReturnsPartialOutputThatCanBeResumed) {
  auto model = peaked_model();
  EngineCore engine(model, small_engine());
  auto prompt = random_tokens(9, 12);
  engine.add_request(greedy_request("long", prompt, 30));
  engine.add_request(greedy_request("other", random_tokens(4, 13), 8));
  for (int i = 0; i < 6; ++i) engine.step();
  auto partial = engine.abort("long");
  ASSERT_TRUE(partial.has_value());
  EXPECT_FALSE(engine.abort("long").has_value()) << "already gone";
  const auto& s = partial->samples[0];
  EXPECT_EQ(s.finish_reason, FinishReason::abort);
  EXPECT_EQ(s.token_ids.size(), 6u);  // one token per step
  EXPECT_EQ(s.logprobs.size(), s.token_ids.size());
  // ROLL's partial rollout: the prompt plus the partial output, continued.
  auto resumed_prompt = prompt;
  resumed_prompt.insert(resumed_prompt.end(), s.token_ids.begin(), s.token_ids.end());
  engine.add_request(greedy_request("resume", resumed_prompt, 30 - 6));
  std::map<std::string, RequestOutput> outs;
  while (engine.has_unfinished()) {
    engine.step();
    for (auto& o : engine.outputs()) outs.emplace(o.request_id, o);
  }
  ASSERT_TRUE(outs.count("other"));
  auto whole = s.token_ids;
  whole.insert(whole.end(), outs.at("resume").samples[0].token_ids.begin(), outs.at("resume").samples[0].token_ids.end());
  EXPECT_EQ(whole, reference_greedy(*model, prompt, 30));
}

TEST(EngineCore, SleepReleasesTheCacheAndWakeResumes) {
  auto model = peaked_model();
  EngineCore engine(model, small_engine());
  auto prompt = random_tokens(10, 14);
  engine.add_request(greedy_request("x", prompt, 10));
  engine.step();
  engine.step();
  engine.sleep();
  EXPECT_TRUE(engine.sleeping());
  EXPECT_THROW(engine.step(), roll::Error);
  EXPECT_THROW(engine.add_request(greedy_request("y", prompt, 3)), roll::Error);
  EXPECT_EQ(engine.cache_stats().cached_blocks, 0);
  engine.wake();
  std::vector<RequestOutput> outs;
  while (engine.has_unfinished()) {
    engine.step();
    for (auto& o : engine.outputs()) outs.push_back(o);
  }
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].samples[0].token_ids, reference_greedy(*model, prompt, 10));
}

TEST(EngineCore, StopTokensStopStringsAndLengthCap) {
  auto model = peaked_model();
  EngineConfig cfg = small_engine();
  // A detokenizer that spells each id as "<id>", so stop strings can span tokens.
  cfg.detokenize = [](std::span<const int32_t> ids) {
    std::string s;
    for (int32_t t : ids) s += "<" + std::to_string(t) + ">";
    return s;
  };
  EngineCore engine(model, cfg);
  auto prompt = random_tokens(5, 15);
  const auto ref = reference_greedy(*model, prompt, 10);

  auto r = greedy_request("tok", prompt, 10);
  r.params.stop_token_ids = {ref[3]};
  auto out = engine.generate({r})[0].samples[0];
  const size_t first = std::find(ref.begin(), ref.end(), ref[3]) - ref.begin();
  EXPECT_EQ(out.token_ids, std::vector<int32_t>(ref.begin(), ref.begin() + first + 1)) << "stop token kept";
  EXPECT_EQ(out.finish_reason, FinishReason::stop);

  r = greedy_request("str", prompt, 10);
  const std::string stop = std::to_string(ref[1]) + "><" + std::to_string(ref[2]);  // spans two tokens
  r.params.stop = {stop};
  out = engine.generate({r})[0].samples[0];
  EXPECT_EQ(out.finish_reason, FinishReason::stop);
  EXPECT_EQ(out.stop_reason, stop);
  EXPECT_EQ(out.token_ids, std::vector<int32_t>(ref.begin(), ref.begin() + 3));
  EXPECT_EQ(out.text, "<" + std::to_string(ref[0]) + "><");

  // Late in a long output (the check decodes only a window of recent tokens).
  const auto long_ref = reference_greedy(*model, prompt, 30);
  r = greedy_request("late", prompt, 30);
  const std::string late = std::to_string(long_ref[20]) + "><" + std::to_string(long_ref[21]) + ">";
  r.params.stop = {late};
  out = engine.generate({r})[0].samples[0];
  std::string spelled;
  size_t expect_len = 0;
  for (size_t i = 0; i < long_ref.size(); ++i) {
    spelled += "<" + std::to_string(long_ref[i]) + ">";
    if (spelled.find(late) != std::string::npos) {
      expect_len = i + 1;
      break;
    }
  }
  ASSERT_GT(expect_len, 0u);
  EXPECT_EQ(out.token_ids.size(), expect_len);
  EXPECT_EQ(out.finish_reason, FinishReason::stop);

  // max_new_tokens is capped at max_model_len - prompt length.
  out = engine.generate({greedy_request("cap", random_tokens(60, 16), 50)})[0].samples[0];
  EXPECT_EQ(out.token_ids.size(), 4u);
  EXPECT_EQ(out.finish_reason, FinishReason::length);
}

TEST(EngineCore, WarmUpLeavesNoTrace) {
  auto model = peaked_model();
  EngineConfig cfg = small_engine();
  cfg.warm_up = true;
  EngineCore engine(model, cfg);
  const KvCacheStats st = engine.cache_stats();
  EXPECT_EQ(st.blocks_allocated, 0);
  EXPECT_EQ(st.cached_blocks, 0);
  EXPECT_EQ(st.free_blocks, st.num_blocks);
  EXPECT_FALSE(engine.has_unfinished());
  EXPECT_TRUE(engine.outputs().empty());
  auto prompt = random_tokens(8, 17);
  EXPECT_EQ(engine.generate({greedy_request("a", prompt, 5)})[0].samples[0].token_ids,
            reference_greedy(*model, prompt, 5));
}

TEST(EngineCore, CapacityFromMemoryBudget) {
  auto model = peaked_model();
  EngineConfig cfg = small_engine(0);
  cfg.max_model_len = 40;  // 10 blocks
  const int64_t weights = model->num_parameters() * 4;
  const int64_t per_block = 2 /*layers*/ * 2 * 4 /*block*/ * 2 /*kv heads*/ * 16 /*head dim*/ * 4;
  cfg.memory_budget_bytes = weights + 100 * per_block;
  cfg.gpu_memory_utilization = 1.0;
  EXPECT_EQ(EngineCore(model, cfg).num_blocks(), 100);
  cfg.gpu_memory_utilization = 0.5;
  cfg.memory_budget_bytes = 2 * (weights + 10 * per_block);
  EXPECT_EQ(EngineCore(model, cfg).num_blocks(), 10);
  cfg.memory_budget_bytes = weights;  // nothing left for one max_model_len sequence
  cfg.gpu_memory_utilization = 1.0;
  EXPECT_THROW(EngineCore(model, cfg), roll::ConfigError);
}
