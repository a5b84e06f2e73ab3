// The sampler on hand-made logits: raw log-probs, greedy, top-k/top-p support, repetition
// penalty, the empirical distribution at a temperature, and reproducible draws.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "roll/engine/sampler.h"

using namespace roll;
using namespace roll::engine;

namespace {

std::vector<SampledToken> draw_many(const at::Tensor& logits, const SamplingParams& p, int64_t n,
                                    std::span<const int32_t> context = {}) {
  std::vector<SampleSpec> specs;
  for (int64_t i = 0; i < n; ++i) specs.push_back({0, &p, context, 5, 0, i});
  return sample_tokens(logits, specs);
}

}  // namespace

TEST(EngineSampler, GreedyAndRawLogProbs) {
  at::Tensor logits = at::tensor({1.0f, 3.0f, -2.0f, 2.5f}).unsqueeze(0);
  SamplingParams p;
  p.temperature = 0;
  auto out = draw_many(logits, p, 1);
  EXPECT_EQ(out[0].token, 1);
  // Log-softmax over 4 logits in another grouping: a few ulp of |log p| ≲ 1.1 (ulp 1.2e-7) -> 1e-6.
  EXPECT_NEAR(out[0].logprob, at::log_softmax(logits, 1)[0][1].item<float>(), 1e-6);
  // The log-prob stays the raw one whatever the temperature and filters.
  p.temperature = 0.3;
  p.top_k = 2;
  p.top_p = 0.5;
  for (const auto& t : draw_many(logits, p, 20))
    EXPECT_NEAR(t.logprob, at::log_softmax(logits, 1)[0][t.token].item<float>(), 1e-6);
}

TEST(EngineSampler, TopKAndTopPRestrictTheSupport) {
  at::Tensor logits = at::tensor({0.0f, 1.0f, 2.0f, 3.0f, 4.0f}).unsqueeze(0);
  SamplingParams p;
  p.temperature = 5.0;  // nearly flat
  p.top_k = 2;
  for (const auto& t : draw_many(logits, p, 200)) EXPECT_TRUE(t.token == 3 || t.token == 4);
  p.top_k = -1;
  p.temperature = 1.0;
  // softmax([0..4]) = .012 .032 .086 .234 .636: top_p 0.8 keeps {4, 3}; 0.5 keeps {4}.
  p.top_p = 0.8;
  std::map<int32_t, int> seen;
  for (const auto& t : draw_many(logits, p, 400)) ++seen[t.token];
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_TRUE(seen.count(3) && seen.count(4));
  p.top_p = 0.5;
  for (const auto& t : draw_many(logits, p, 50)) EXPECT_EQ(t.token, 4);
}

TEST(EngineSampler, EmpiricalFrequenciesFollowTheTemperedSoftmax) {
  at::Tensor logits = at::tensor({0.5f, 1.5f, -1.0f, 1.0f}).unsqueeze(0);
  SamplingParams p;
  p.temperature = 0.7;
  const int64_t n = 20000;
  std::vector<double> freq(4, 0);
  for (const auto& t : draw_many(logits, p, n)) freq[t.token] += 1.0 / n;
  at::Tensor expect = at::softmax(logits[0] / 0.7, 0);
  // Sampling noise, not rounding: sqrt(p(1 − p)/n) ≤ 3.5e-3, so 0.015 is > 4 sigma.
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(freq[i], expect[i].item<double>(), 0.015) << "token " << i;
}

TEST(EngineSampler, RepetitionPenaltyDemotesSeenTokens) {
  at::Tensor logits = at::tensor({2.0f, 1.9f, -1.0f, -1.1f}).unsqueeze(0);
  SamplingParams p;
  p.temperature = 0;
  p.repetition_penalty = 1.2;
  std::vector<int32_t> ctx{0, 0, 2};
  auto out = draw_many(logits, p, 1, ctx);
  EXPECT_EQ(out[0].token, 1);  // 2.0 / 1.2 < 1.9
  EXPECT_NEAR(out[0].logprob, at::log_softmax(logits, 1)[0][1].item<float>(), 1e-6) << "raw, before the penalty";
  logits = at::tensor({-1.0f, -1.1f}).unsqueeze(0);
  std::vector<int32_t> ctx2{0};
  EXPECT_EQ(draw_many(logits, p, 1, ctx2)[0].token, 1);  // -1.0 * 1.2 < -1.1
}

TEST(EngineSampler, DrawsDependOnSeedSampleAndPositionOnly) {
  at::Tensor logits = at::randn({3, 50});
  SamplingParams p;
  p.temperature = 1.0;
  std::vector<SampleSpec> a{{0, &p, {}, 9, 0, 4}, {1, &p, {}, 9, 1, 4}, {2, &p, {}, 9, 0, 5}};
  std::vector<SampleSpec> b{{2, &p, {}, 9, 0, 5}, {0, &p, {}, 9, 0, 4}};
  auto ra = sample_tokens(logits, a);
  auto rb = sample_tokens(logits, b);
  EXPECT_EQ(ra[0].token, rb[1].token);
  EXPECT_EQ(ra[2].token, rb[0].token);
  EXPECT_NE(sample_uniform(9, 0, 4), sample_uniform(9, 1, 4));
  EXPECT_NE(sample_uniform(9, 0, 4), sample_uniform(10, 0, 4));
  EXPECT_NE(sample_uniform(9, 0, 4), sample_uniform(9, 0, 5));
}

TEST(EngineSampler, TopPAloneOnAFlatVocabularyFallsBackToAFullSort) {
  // 5000 equal logits: the first 1024 candidates hold only ~20% of the mass.
  at::Tensor logits = at::zeros({1, 5000});
  SamplingParams p;
  p.temperature = 1.0;
  p.top_p = 0.5;
  std::map<int32_t, int> seen;
  for (const auto& t : draw_many(logits, p, 400)) {
    EXPECT_LT(t.token, 2502) << "equal logits: ties keep the lower ids";
    ++seen[t.token];
  }
  EXPECT_GT(seen.size(), 300u);
}
