// adjust_batch (docs/agentic.md) per mode: sizes, counts, duplicated rows equal to originals, the delete
// fallback, and the divisor from the config and placement.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <map>

#include "roll/config/placement.h"
#include "roll/config/schema.h"
#include "roll/core/error.h"
#include "roll/pipeline/rollout/batch_adjust.h"

namespace roll::pipeline {
namespace {

Batch rows(int64_t n) {
  Batch b(n);
  b.set_tensor("x", at::arange(n, at::kLong).unsqueeze(1).repeat({1, 3}));
  NonTensorColumn id;
  for (int64_t i = 0; i < n; ++i) id.push_back(i);
  b.set_column("id", id);
  return b;
}

// Every output row is one of the input rows, whole (tensor and cell agree).
std::map<int64_t, int> row_counts(const Batch& b) {
  std::map<int64_t, int> count;
  for (int64_t i = 0; i < b.size(); ++i) {
    const int64_t id = b.get_int("id", i);
    EXPECT_TRUE(at::equal(b.tensor("x")[i], at::full({3}, id, at::kLong))) << "row " << i;
    ++count[id];
  }
  return count;
}

TEST(PipelineBatchAdjust, EachModeMakesAMultipleOfTheDivisor) {
  // B = 10, D = 4: r = 2.
  auto copy = adjust_batch(rows(10), 4, "copy", 1);
  EXPECT_EQ(copy.batch.size(), 12);
  EXPECT_EQ(copy.added, 2);
  EXPECT_EQ(row_counts(copy.batch).size(), 10u);  // all originals kept
  auto del = adjust_batch(rows(10), 4, "delete", 1);
  EXPECT_EQ(del.batch.size(), 8);
  EXPECT_EQ(del.removed, 2);
  for (const auto& [id, n] : row_counts(del.batch)) EXPECT_EQ(n, 1);
  // auto: r = 2 < B/2 = 5 -> delete; B = 7, r = 3 < 3.5 -> delete; B = 6, r = 2 < 3 -> delete; B = 5,
  // r = 1 -> delete; B = 3 < D -> copy.
  EXPECT_EQ(adjust_batch(rows(10), 4, "auto", 1).removed, 2);
  EXPECT_EQ(adjust_batch(rows(3), 4, "auto", 1).added, 1);
  EXPECT_EQ(adjust_batch(rows(7), 8, "auto", 1).added, 1);  // r = 7 >= 3.5 -> copy
  auto sample = adjust_batch(rows(10), 4, "random_sample", 1);
  EXPECT_EQ(sample.batch.size(), 4);
  EXPECT_EQ(sample.removed, 6);
  EXPECT_EQ(adjust_batch(rows(3), 4, "random_sample", 1).batch.size(), 4);
  EXPECT_EQ(adjust_batch(rows(8), 4, "copy", 1).added, 0);  // already a multiple
}

TEST(PipelineBatchAdjust, CopyDrawsWithReplacementOnlyWhenItMust) {
  auto few = adjust_batch(rows(5), 8, "copy", 3);  // 3 extra of 5: distinct
  for (const auto& [id, n] : row_counts(few.batch)) EXPECT_LE(n, 2);
  auto many = adjust_batch(rows(2), 16, "copy", 3);  // 14 extra of 2: with replacement
  EXPECT_EQ(many.batch.size(), 16);
  EXPECT_EQ(row_counts(many.batch).size(), 2u);
  // delete that would empty the batch copies instead.
  EXPECT_EQ(adjust_batch(rows(3), 4, "delete", 1).batch.size(), 4);
  // Same seed, same rows.
  EXPECT_TRUE(at::equal(adjust_batch(rows(10), 4, "delete", 9).batch.tensor("x"),
                        adjust_batch(rows(10), 4, "delete", 9).batch.tensor("x")));
}

TEST(PipelineBatchAdjust, DivisorAndBadModeNameTheKey) {
  config::PipelineConfig c;
  c.actor_train.training_args.per_device_train_batch_size = 2;
  c.actor_train.training_args.gradient_accumulation_steps = 3;
  c.actor_train.infer_batch_size = 4;
  config::PlacementPlan plan;
  config::ClusterPlacement train;
  train.name = "actor_train";
  train.workers.resize(2);
  plan.clusters.push_back(train);
  EXPECT_EQ(batch_divisor(c, plan), 24);  // lcm(2*3*2, 4*2)
  try {
    adjust_batch(rows(4), 3, "shuffle", 1);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "batch_adjust_mode");
  }
}

}  // namespace
}  // namespace roll::pipeline
