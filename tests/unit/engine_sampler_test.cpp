// The sampler on hand-made logits: raw log-probs, greedy, top-k/top-p support, repetition
// penalty, the empirical distribution at a temperature, reproducible draws, and vocabulary-wide
// rows against a float64 reference.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "roll/engine/cpu_kernels.h"
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

TEST(EngineSampler, TopPAloneOnAFlatVocabularyKeepsHalfOfItLowerIdsFirst) {
  // 5000 equal logits: every token is a candidate, and the nucleus is the first 2500 ids.
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

// Rows of a real vocabulary's width (the last block partial), checked against a float64 ATen
// reference built from the same uniform draws: each drawn token's cumulative interval, in the
// order the sampler walks (index order for the whole vocabulary, largest first for top-k/top-p),
// must hold u within the rounding of a sum of V fp32 exponentials (relative 1e-7 each: |error| of
// the normalised CDF <= ~1e-6, so 1e-5).
TEST(EngineSampler, VocabularyRowsFollowAFloat64Reference) {
  const int64_t R = 6, V = 151936 + 5;
  at::Generator g = at::detail::createCPUGenerator(29);
  at::Tensor logits = at::randn({R, V}, g) * 2.0;
  logits.scatter_add_(1, at::randint(0, V, {R, 12}, g, at::kLong), at::full({R, 12}, 9.0f));
  at::Tensor ref_lp = at::log_softmax(logits.to(at::kDouble), 1);
  constexpr double kCdfTol = 1e-5;
  auto check_lp = [&](int64_t r, const SampledToken& t) {
    const double want = ref_lp[r][t.token].item<double>();
    // fp32 result of logit - lse: a few ulp of |logit| + |lse| (< 40).
    EXPECT_NEAR(t.logprob, want, 40 * 4 * 1.2e-7) << "row " << r << " token " << t.token;
  };
  struct Case {
    double temperature, top_p;
    int64_t top_k;
  };
  for (const Case c : {Case{0.0, 1.0, -1}, Case{0.8, 1.0, -1}, Case{1.0, 1.0, 40}, Case{1.0, 0.9, -1},
                       Case{0.7, 0.95, 200}}) {
    SamplingParams p;
    p.temperature = c.temperature, p.top_p = c.top_p, p.top_k = c.top_k;
    std::vector<SampleSpec> specs;
    for (int64_t r = 0; r < R; ++r)
      for (int64_t j = 0; j < 5; ++j) specs.push_back({r, &p, {}, 11, j, r});
    const auto out = sample_tokens(logits, specs);
    for (size_t i = 0; i < specs.size(); ++i) {
      const int64_t r = specs[i].row;
      check_lp(r, out[i]);
      at::Tensor row = logits[r].to(at::kDouble);
      if (c.temperature == 0) {
        EXPECT_EQ(out[i].token, row.argmax().item<int64_t>());
        continue;
      }
      const double u = sample_uniform(11, specs[i].sample_index, specs[i].position);
      at::Tensor order = at::arange(V, at::kLong);
      at::Tensor prob = at::softmax(row / c.temperature, 0);
      if (c.top_k > 0 || c.top_p < 1.0) {
        order = std::get<1>(at::sort(row, 0, /*descending=*/true));  // ties: none in random logits
        prob = prob.index_select(0, order);
        if (c.top_k > 0) {
          order = order.narrow(0, 0, c.top_k);
          prob = prob.narrow(0, 0, c.top_k);
        }
        prob = prob / prob.sum();
        if (c.top_p < 1.0) {  // keep while the mass before a token is below top_p
          at::Tensor before = prob.cumsum(0) - prob;
          const int64_t keep = std::max<int64_t>(1, (before < c.top_p).sum().item<int64_t>());
          order = order.narrow(0, 0, keep);
          prob = prob.narrow(0, 0, keep);
          prob = prob / prob.sum();
        }
      }
      at::Tensor at_token = (order == out[i].token).nonzero();
      ASSERT_EQ(at_token.numel(), 1) << "token " << out[i].token << " outside the support, row " << r;
      const int64_t k = at_token.item<int64_t>();
      at::Tensor cdf = prob.cumsum(0);
      const double hi = cdf[k].item<double>(), lo = hi - prob[k].item<double>();
      EXPECT_GE(u, lo - kCdfTol) << "row " << r << " t " << c.temperature << " k " << c.top_k << " p " << c.top_p;
      EXPECT_LE(u, hi + kCdfTol) << "row " << r << " t " << c.temperature << " k " << c.top_k << " p " << c.top_p;
    }
  }
}

TEST(EngineSampler, FirstAboveFindsTheFirstLargerValue) {
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 101);
  for (int64_t i0 : {0, 3, 17, 500})
    for (float v : {50.0f, 99.0f, 100.0f, -1.0f}) {
      int64_t want = static_cast<int64_t>(x.size());
      for (int64_t i = i0; i < static_cast<int64_t>(x.size()); ++i)
        if (x[i] > v) {
          want = i;
          break;
        }
      EXPECT_EQ(kernels::first_above(x.data(), i0, static_cast<int64_t>(x.size()), v), want) << i0 << " " << v;
    }
}
