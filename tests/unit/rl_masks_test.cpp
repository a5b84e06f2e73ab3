// Sample-level masks (docs/rl.md) and prompt-level query filters (docs/rl.md).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "roll/core/error.h"
#include "roll/rl/masks.h"
#include "roll/rl/query_filter.h"

namespace roll::rl {
namespace {

at::Tensor vec(std::vector<float> v) { return at::tensor(v); }
at::Tensor lens_mask(std::vector<int64_t> lens, int64_t T) {
  at::Tensor l = at::tensor(lens);
  return (at::arange(T).unsqueeze(0) < l.unsqueeze(1)).to(at::kLong);
}

TEST(RlMasksSample, AllOffKeepsEverything) {
  SampleMaskResult r = sample_level_mask(lens_mask({5, 3}, 5), 5, {}, {});
  EXPECT_TRUE(at::equal(r.final_response_mask, lens_mask({5, 3}, 5)));
  EXPECT_DOUBLE_EQ(r.metrics.last("actor/max_len_mask_ratio"), 1.0);
  EXPECT_DOUBLE_EQ(r.metrics.last("actor/difficulty_mask_ratio"), 1.0);
  EXPECT_DOUBLE_EQ(r.metrics.last("actor/error_len_mask_ratio"), 1.0);
  EXPECT_DOUBLE_EQ(r.metrics.last("actor/final_mask_ratio"), 1.0);
  EXPECT_DOUBLE_EQ(r.metrics.last("actor/samples_used"), 2.0);
  EXPECT_DOUBLE_EQ(r.metrics.last("actor/samples_total"), 2.0);
  EXPECT_FALSE(r.skip_step);
}

TEST(RlMasksSample, MaxLenDifficultyAndErrorLength) {
  at::Tensor m = lens_mask({5, 3, 2, 1}, 5);
  SampleMaskParams p;
  p.max_len_mask = true;
  SampleMaskResult a = sample_level_mask(m, 5, {}, p);
  EXPECT_TRUE(at::equal(a.keep, vec({0, 1, 1, 1})));
  EXPECT_DOUBLE_EQ(a.metrics.last("actor/max_len_mask_ratio"), 0.75);

  SampleMaskParams d;
  d.difficulty_mask = true;
  d.difficulty_low_threshold = 0.1;
  d.difficulty_high_threshold = 0.95;
  d.num_return_sequences = 2;
  // Group means 0.5 (kept) and 1.0 (all correct: dropped, the bound is strict).
  SampleMaskResult b = sample_level_mask(m, 5, vec({1, 0, 1, 1}), d);
  EXPECT_TRUE(at::equal(b.keep, vec({1, 1, 0, 0})));
  EXPECT_DOUBLE_EQ(b.metrics.last("actor/difficulty_mask_ratio"), 0.5);
  d.num_return_sequences = 1;  // n = 1: no groups, all kept
  EXPECT_TRUE(at::equal(sample_level_mask(m, 5, vec({1, 0, 1, 1}), d).keep, vec({1, 1, 1, 1})));

  SampleMaskParams e;
  e.error_max_len_clip = true;
  e.error_max_len_threshold = 3;
  // score 1 kept; score 0 kept only when shorter than 3; other scores dropped.
  SampleMaskResult c = sample_level_mask(m, 5, vec({0, 1, 0, 0.5f}), e);
  EXPECT_TRUE(at::equal(c.keep, vec({0, 1, 1, 0})));
  EXPECT_TRUE(at::equal(c.final_response_mask.sum(1), at::tensor(std::vector<int64_t>{0, 3, 2, 0})));
  EXPECT_DOUBLE_EQ(c.metrics.last("actor/samples_used"), 2.0);
}

TEST(RlMasksSample, EverythingMaskedSkipsTheStep) {
  SampleMaskParams p;
  p.max_len_mask = true;
  SampleMaskResult r = sample_level_mask(lens_mask({4, 4}, 4), 4, {}, p);
  EXPECT_TRUE(r.skip_step);
  EXPECT_DOUBLE_EQ(r.metrics.last("mask/final_mask_sum_eq_0"), 1.0);
  EXPECT_TRUE(sample_level_mask(lens_mask({0, 0}, 4), 4, {}, {}).skip_step);
}

TEST(RlMasksSample, ErrorsNameTheTensor) {
  SampleMaskParams d;
  d.difficulty_mask = true;
  d.num_return_sequences = 2;
  try {
    sample_level_mask(lens_mask({1, 2}, 3), 3, vec({1}), d);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("scores"), std::string::npos);
  }
  EXPECT_THROW(sample_level_mask(lens_mask({1, 2}, 3), 3, vec({1, NAN}), d), Error);
}

TEST(RlMasksAgentic, FinalMaskIsTheResponseMask) {
  SampleMaskResult r = agentic_response_level_mask(lens_mask({2, 3}, 4));
  EXPECT_TRUE(at::equal(r.final_response_mask, lens_mask({2, 3}, 4)));
  EXPECT_DOUBLE_EQ(r.metrics.last("actor/final_mask_ratio"), 1.0);
}

TEST(RlMasksQueryFilter, MeanAndStdFilters) {
  QueryFilterParams none;
  EXPECT_TRUE(keep_query(vec({0, 0, 0}), none));
  QueryFilterParams mean;
  mean.type = parse_query_filter_type("mean_filter");
  mean.threshold_up = 1.0;
  mean.threshold_down = 0.0;
  EXPECT_FALSE(keep_query(vec({1, 1, 1}), mean));  // all correct: mean >= up
  EXPECT_FALSE(keep_query(vec({0, 0, 0}), mean));  // all wrong: mean <= down
  EXPECT_TRUE(keep_query(vec({1, 0, 1}), mean));
  QueryFilterParams def_mean;
  def_mean.type = QueryFilterType::mean_filter;  // defaults: down −1, up +inf
  EXPECT_TRUE(keep_query(vec({0, 0}), def_mean));
  QueryFilterParams sd;
  sd.type = QueryFilterType::std_filter;
  sd.std_threshold = 0.0;
  EXPECT_FALSE(keep_query(vec({1, 1, 1}), sd));  // equal rewards: no signal
  EXPECT_TRUE(keep_query(vec({1, 0, 1}), sd));
  EXPECT_TRUE(keep_query(vec({1}), sd));  // n = 1: std undefined, kept
  EXPECT_THROW(keep_query(vec({1, NAN}), sd), Error);
  EXPECT_THROW(parse_query_filter_type("dapo"), Error);
}

}  // namespace
}  // namespace roll::rl
