// Dynamic batching shard and mini-batch grouping (docs/rl.md, ROLL tests/utils/test_dynamic_batching.py).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "roll/core/error.h"
#include "roll/rl/dynamic_batching.h"

namespace roll::rl {
namespace {

using Ranges = std::vector<Range>;

TEST(RlDynamicBatchingShard, SpecVector) {
  std::vector<int64_t> lens{2, 4, 7, 6, 3, 4};
  DynamicBatchingPlan plan = dynamic_batching_shard(lens, 20, 2, 20, 2);
  EXPECT_EQ(plan.micro_batch_indices, (Ranges{{0, 2}, {2, 3}}));
  EXPECT_EQ(plan.micro_batch_lengths, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(plan.order, (std::vector<int64_t>{0, 1, 3, 4, 5, 2}));
  auto m = plan.metrics.reduce();
  EXPECT_DOUBLE_EQ(m.at("dynamic_batching/valid_tokens"), 26);
  EXPECT_DOUBLE_EQ(m.at("dynamic_batching/actual_tokens_origin"), 120);
  EXPECT_DOUBLE_EQ(m.at("dynamic_batching/actual_tokens"), 32);
  EXPECT_DOUBLE_EQ(m.at("dynamic_batching/removed_padding_tokens"), 88);
  EXPECT_NEAR(m.at("dynamic_batching/removed_padding_ratio"), 88.0 / 120.0, 1e-12);

  // dp rank 0 holds the first B/dp positions; one micro-batch per mini-batch with ga_steps 1.
  std::vector<MiniBatch> mbs = make_mini_batches(plan.micro_batch_indices, plan.micro_batch_lengths, 3, 1);
  ASSERT_EQ(mbs.size(), 2u);
  EXPECT_EQ(mbs[0].micro_batch_indices, (Ranges{{0, 2}}));
  EXPECT_EQ(mbs[1].micro_batch_indices, (Ranges{{0, 1}}));
  EXPECT_EQ(mbs[1].start, 2);
  // The first micro-batch's input_ids narrowed to its length have shape (2, 4).
  at::Tensor input_ids = at::arange(6).unsqueeze(1).expand({6, 20});
  at::Tensor shard0 = input_ids.index_select(0, at::tensor(plan.order)).narrow(0, 0, 3);
  auto [s, e] = mbs[0].micro_batch_indices[0];
  at::Tensor mb = shard0.narrow(0, mbs[0].start + s, e - s).narrow(1, 0, mbs[0].micro_batch_lengths[0]);
  EXPECT_EQ(mb.sizes(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(mb[0][0].item<int64_t>(), 0);
  EXPECT_EQ(mb[1][0].item<int64_t>(), 1);
}

TEST(RlDynamicBatchingShard, SortedShardsWalkLikeTheShard) {
  // The spec vector's shards after the sort and deal: rank 0 [2, 4, 6], rank 1 [3, 4, 7].
  DynamicBatchingPlan plan = plan_sorted_shards({{2, 4, 6}, {3, 4, 7}}, 20, 20, 2);
  EXPECT_EQ(plan.micro_batch_indices, (Ranges{{0, 2}, {2, 3}}));
  EXPECT_EQ(plan.micro_batch_lengths, (std::vector<int64_t>{4, 8}));
  EXPECT_TRUE(plan.order.empty());
  EXPECT_DOUBLE_EQ(plan.metrics.reduce().at("dynamic_batching/actual_tokens"), 32);
  EXPECT_THROW(plan_sorted_shards({{2, 4}, {3}}, 20, 20, 2), Error);  // shards of different sizes
}

TEST(RlDynamicBatchingShard, PrefixAndErrors) {
  DynamicBatchingPlan plan = dynamic_batching_shard({2, 2}, 4, 1, 8, 2, 1, 0, "actor_train");
  EXPECT_TRUE(plan.metrics.contains("dynamic_batching/actor_train/valid_tokens"));
  EXPECT_THROW(dynamic_batching_shard({30}, 32, 1, 16, 8), Error);  // a sequence above the budget
  EXPECT_THROW(dynamic_batching_shard({1, 2, 3}, 4, 2, 16, 2), Error);
}

TEST(RlDynamicBatchingShard, VirtualPipelineGivesMultipleOfPp) {
  at::manual_seed(42);
  at::Tensor l = at::randint(128, 8192, {256}, at::kLong);
  std::vector<int64_t> lens(l.data_ptr<int64_t>(), l.data_ptr<int64_t>() + 256);
  DynamicBatchingPlan plan = dynamic_batching_shard(lens, 8192, 4, 8192, 128, 4, 2);
  EXPECT_EQ(plan.micro_batch_indices.size() % 4, 0u);
  EXPECT_EQ(plan.micro_batch_lengths.size(), plan.micro_batch_indices.size());
}

DynamicBatchingPlan uniform(int64_t max_tokens) {
  return dynamic_batching_shard(std::vector<int64_t>(8, 8), 8, 1, max_tokens, 8);
}

TEST(RlDynamicBatchingMiniBatch, KeepMiniBatchWithMoreMicroBatches) {
  DynamicBatchingPlan plan = uniform(8);
  auto mbs = make_mini_batches(plan.micro_batch_indices, plan.micro_batch_lengths, 8, 2, true, 4);
  ASSERT_EQ(mbs.size(), 2u);
  for (const auto& mb : mbs) {
    EXPECT_EQ(mb.end - mb.start, 4);
    EXPECT_EQ(mb.micro_batch_indices, (Ranges{{0, 1}, {1, 2}, {2, 3}, {3, 4}}));
  }
}

TEST(RlDynamicBatchingMiniBatch, KeepMiniBatchWithFewerMicroBatches) {
  DynamicBatchingPlan plan = uniform(64);
  EXPECT_EQ(plan.micro_batch_indices, (Ranges{{0, 8}}));
  auto mbs = make_mini_batches(plan.micro_batch_indices, plan.micro_batch_lengths, 8, 2, true, 4);
  ASSERT_EQ(mbs.size(), 2u);
  EXPECT_EQ(mbs[0].micro_batch_indices, (Ranges{{0, 4}}));
  EXPECT_EQ(mbs[1].micro_batch_indices, (Ranges{{0, 4}}));
  EXPECT_EQ(mbs[1].start, 4);
}

TEST(RlDynamicBatchingMiniBatch, SplitsAtStaticBoundaries) {
  auto mbs = make_mini_batches({{0, 2}, {2, 4}, {4, 5}, {5, 8}}, {8, 8, 8, 8}, 8, 2, true, 4);
  ASSERT_EQ(mbs.size(), 2u);
  EXPECT_EQ(mbs[0].micro_batch_indices, (Ranges{{0, 2}, {2, 4}}));
  EXPECT_EQ(mbs[1].micro_batch_indices, (Ranges{{0, 1}, {1, 4}}));
  EXPECT_EQ(mbs[1].micro_batch_lengths, (std::vector<int64_t>{8, 8}));
  auto spans = make_mini_batches({{0, 6}}, {2}, 6, 8, true, 2);
  ASSERT_EQ(spans.size(), 3u);
  for (const auto& mb : spans) {
    EXPECT_EQ(mb.micro_batch_indices, (Ranges{{0, 2}}));
    EXPECT_EQ(mb.micro_batch_lengths, (std::vector<int64_t>{2}));
  }
  // Default grouping: ga_steps consecutive micro-batches.
  auto ga = make_mini_batches({{0, 2}, {2, 4}, {4, 5}, {5, 8}}, {8, 8, 8, 8}, 8, 3);
  ASSERT_EQ(ga.size(), 2u);
  EXPECT_EQ(ga[0].micro_batch_indices, (Ranges{{0, 2}, {2, 4}, {4, 5}}));
  EXPECT_EQ(ga[1].micro_batch_indices, (Ranges{{0, 3}}));
}

TEST(RlDynamicBatchingMiniBatch, VppSplitsEachGroup) {
  auto mbs = make_mini_batches({{0, 4}, {4, 8}}, {2, 2}, 8, 2, true, 4, 4, 2);
  ASSERT_EQ(mbs.size(), 2u);
  for (const auto& mb : mbs) {
    EXPECT_EQ(mb.micro_batch_indices, (Ranges{{0, 1}, {1, 2}, {2, 3}, {3, 4}}));
    EXPECT_EQ(mb.micro_batch_lengths, (std::vector<int64_t>{2, 2, 2, 2}));
  }
  try {
    make_mini_batches({{0, 1}, {1, 2}}, {2, 2}, 2, 2, true, 2, 4, 2);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be split into a multiple"), std::string::npos);
  }
}

TEST(RlDynamicBatchingMiniBatch, LargeRangeWithVpp) {
  DynamicBatchingPlan plan = dynamic_batching_shard(std::vector<int64_t>(8, 8), 8, 1, 64, 8, 4, 2);
  EXPECT_EQ(plan.micro_batch_indices, (Ranges{{0, 2}, {2, 4}, {4, 6}, {6, 8}}));
  auto mbs = make_mini_batches(plan.micro_batch_indices, plan.micro_batch_lengths, 8, 2, true, 4, 4, 2);
  ASSERT_EQ(mbs.size(), 2u);
  for (const auto& mb : mbs) EXPECT_EQ(mb.micro_batch_indices, (Ranges{{0, 1}, {1, 2}, {2, 3}, {3, 4}}));
}

TEST(RlDynamicBatchingMiniBatch, RejectsNonCoveringLayouts) {
  auto msg = [](Ranges r) {
    try {
      make_mini_batches(r, std::vector<int64_t>(r.size(), 2), 4, 2, true, 2);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(msg({{0, 2}, {3, 4}}).find("contiguous"), std::string::npos);
  EXPECT_NE(msg({{0, 2}}).find("complete local batch"), std::string::npos);
  EXPECT_NE(msg({{0, 3}, {2, 4}}).find("contiguous"), std::string::npos);
  EXPECT_THROW(make_mini_batches({{0, 4}}, {2}, 4, 0), Error);
  EXPECT_THROW(make_mini_batches({{0, 4}}, {2}, 4, 2, true, 3), Error);
}

}  // namespace
}  // namespace roll::rl
