// Mini-batch / micro-batch plans with the seeded per-epoch shuffle.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "roll/train/batch_plan.h"

using namespace roll::train;

TEST(TrainBatchPlan, SizesCoverageAndShortLastMiniBatch) {
  // 10 rows, micro 2, GA 2 -> mini-batches of 4, 4, 2 per epoch; 2 epochs.
  auto plan = plan_mini_batches(10, 2, 2, 2, 42);
  ASSERT_EQ(plan.size(), 6u);
  EXPECT_EQ(plan[0].micro_batches.size(), 2u);
  EXPECT_EQ(plan[2].micro_batches.size(), 1u);
  EXPECT_EQ(plan[2].micro_batches[0].size(), 2u);
  for (int e = 0; e < 2; ++e) {
    std::vector<int64_t> seen;
    for (int m = 0; m < 3; ++m)
      for (const auto& mb : plan[e * 3 + m].micro_batches) seen.insert(seen.end(), mb.begin(), mb.end());
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> all(10);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(seen, all) << "epoch " << e;
  }
}

TEST(TrainBatchPlan, SeededShuffleIsDeterministicAndDiffersPerEpoch) {
  auto a = plan_mini_batches(16, 4, 1, 2, 7), b = plan_mini_batches(16, 4, 1, 2, 7), c = plan_mini_batches(16, 4, 1, 2, 8);
  auto flat = [](const std::vector<MiniBatchPlan>& p) {
    std::vector<int64_t> v;
    for (const auto& m : p)
      for (const auto& mb : m.micro_batches) v.insert(v.end(), mb.begin(), mb.end());
    return v;
  };
  EXPECT_EQ(flat(a), flat(b));
  EXPECT_NE(flat(a), flat(c));
  auto fa = flat(a);
  EXPECT_NE(std::vector<int64_t>(fa.begin(), fa.begin() + 16), std::vector<int64_t>(fa.begin() + 16, fa.end()));
  std::vector<int64_t> identity(16);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(std::vector<int64_t>(fa.begin(), fa.begin() + 16), identity);
}

TEST(TrainBatchPlan, NoShuffleKeepsOrder) {
  auto p = plan_mini_batches(5, 2, 1, 1, 0, false);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].micro_batches[0], (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(p[2].micro_batches[0], (std::vector<int64_t>{4}));
  EXPECT_TRUE(plan_mini_batches(0, 2, 1, 1, 0).empty());
}
