// Karmarkar–Karp partitions (identical to ROLL's get_seqlen_balanced_partitions, vectors produced by its
// Python implementation), batch_balance (docs/rl.md), sequence-packing load balance and restore order
// (docs/rl.md, ROLL tests/utils/test_sequence_packing.py).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "roll/core/error.h"
#include "roll/rl/balance.h"

namespace roll::rl {
namespace {

TEST(RlBalanceKarmarkarKarp, MatchesRollVectors) {
  EXPECT_EQ(karmarkar_karp({5, 1, 4, 2, 3, 6, 7, 8}, 3, false), (Partitions{{0, 3, 5}, {1, 2, 6}, {4, 7}}));
  EXPECT_EQ(karmarkar_karp({5, 1, 4, 2, 3, 6, 7, 8}, 2, true), (Partitions{{0, 1, 2, 7}, {3, 4, 5, 6}}));
  // Ties everywhere: the heap order of CPython decides.
  EXPECT_EQ(karmarkar_karp({3, 3, 3, 3, 3, 3}, 3, true), (Partitions{{0, 5}, {1, 4}, {2, 3}}));
  EXPECT_EQ(karmarkar_karp({1, 1, 1, 1, 2, 2}, 4, false), (Partitions{{0, 3}, {1, 2}, {5}, {4}}));
}

TEST(RlBalanceKarmarkarKarp, MatchesRollOnLargerInputs) {
  std::vector<int64_t> w{140892, 596854, 888599, 841236, 800876, 66173,  267460, 123647, 519502, 797927,
                         471326, 495186, 683245, 398056, 827037, 220154, 98419,  511555, 29725,  936711,
                         876364, 408745, 453790, 636945, 799309, 804424, 2209,   729634, 467023, 279268,
                         756590, 840776, 239875, 619870, 991189, 107193, 945216};
  EXPECT_EQ(karmarkar_karp(w, 5, false), (Partitions{{0, 8, 14, 15, 20, 22, 24, 35},
                                                     {1, 3, 11, 27, 29, 34},
                                                     {2, 10, 16, 23, 30, 31, 32},
                                                     {6, 9, 18, 25, 28, 33, 36},
                                                     {4, 5, 7, 12, 13, 17, 19, 21, 26}}));
  std::vector<int64_t> w35(w.begin(), w.begin() + 35);
  EXPECT_EQ(karmarkar_karp(w35, 7, true),
            (Partitions{{0, 4, 6, 31, 33}, {7, 10, 25, 29, 34}, {5, 11, 19, 21, 30}, {8, 9, 20, 26, 28},
                        {2, 15, 17, 24, 32}, {1, 3, 18, 22, 27}, {12, 13, 14, 16, 23}}));
}

TEST(RlBalanceKarmarkarKarp, Errors) {
  EXPECT_THROW(karmarkar_karp({1, 2}, 3, false), Error);
  EXPECT_THROW(karmarkar_karp({1, 2, 3}, 2, true), Error);
  EXPECT_THROW(karmarkar_karp({1, 2, 3}, 0, false), Error);
}

TEST(RlBalanceBatch, ReordersForDataParallelRanks) {
  std::vector<int64_t> lens{166, 486, 78, 203, 334, 25, 38, 421, 275, 49, 188, 299, 30, 466, 260, 110};
  BalanceResult r = batch_balance(lens, 4, "global_seqlen/actor_train");
  EXPECT_EQ(r.partitions, (Partitions{{12, 14, 13, 15}, {5, 8, 1, 2}, {6, 11, 4, 10}, {9, 3, 7, 0}}));
  EXPECT_EQ(r.order, (std::vector<int64_t>{12, 14, 13, 15, 5, 8, 1, 2, 6, 11, 4, 10, 9, 3, 7, 0}));
  auto m = r.metrics.reduce();
  EXPECT_DOUBLE_EQ(m.at("global_seqlen/actor_train/min"), 811);
  EXPECT_DOUBLE_EQ(m.at("global_seqlen/actor_train/max"), 933);
  EXPECT_DOUBLE_EQ(m.at("global_seqlen/actor_train/minmax_diff"), 122);
  EXPECT_DOUBLE_EQ(m.at("global_seqlen/actor_train/balanced_min"), 839);
  EXPECT_DOUBLE_EQ(m.at("global_seqlen/actor_train/balanced_max"), 866);
  EXPECT_DOUBLE_EQ(m.at("global_seqlen/actor_train/mean"), 857);
}

TEST(RlBalanceBatch, KeepMinibatchBalancesEachBlock) {
  std::vector<int64_t> lens{1, 100, 2, 99, 50, 50, 3, 4};
  BalanceResult r = batch_balance(lens, 2, "g", true, 4);
  for (const auto& p : r.partitions) {
    ASSERT_EQ(p.size(), 4u);
    EXPECT_EQ(std::count_if(p.begin(), p.end(), [](int64_t i) { return i < 4; }), 2);
  }
  EXPECT_THROW(batch_balance({1, 1, 1, 1}, 2, "g", true, 0), Error);
  EXPECT_THROW(batch_balance({1, 1, 1, 1}, 2, "g", true, 3), Error);
  try {
    batch_balance({1, 1, 1, 1}, 2, "g", true, 8);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("minibatch_size"), std::string::npos);
  }
  EXPECT_THROW(batch_balance({1, 1, 1}, 2, "g"), Error);
}

TEST(RlBalancePacking, LoadBalancePackerVector) {
  std::vector<int64_t> lens{512, 1024, 256, 2048, 128, 768, 1536, 384, 896, 640};
  SequencePackingParams p;
  p.max_packed_sequence_length = 4096;
  int64_t num = packing_num_micro_batches(lens, 2048, p);
  EXPECT_EQ(num, 2);
  PackingPlan plan = load_balance_pack(lens, 2048, num, p, false);
  EXPECT_EQ(plan.partitions, (Partitions{{2, 3, 4, 5, 8}, {0, 1, 6, 7, 9}}));
  EXPECT_DOUBLE_EQ(plan.metrics.last("forward/num_micro_batches"), 2.0);
  EXPECT_DOUBLE_EQ(plan.metrics.last("forward/avg_samples_per_pack"), 5.0);
  EXPECT_NEAR(plan.metrics.last("forward/effective_ratio"), 8192.0 / (10 * 2048.0), 1e-12);
  // Restore: results in packed order go back to the original order exactly.
  std::vector<int64_t> order = packing_order(plan.partitions);
  at::Tensor packed = at::arange(10).to(at::kFloat) * 10;
  at::Tensor restored = restore_results_order(packed, plan.partitions);
  for (int64_t pos = 0; pos < 10; ++pos) EXPECT_EQ(restored[order[pos]].item<float>(), packed[pos].item<float>());
  at::Tensor orig = at::arange(10).unsqueeze(1).to(at::kFloat);
  at::Tensor shuffled = orig.index_select(0, at::tensor(order));
  EXPECT_TRUE(at::equal(restore_results_order(shuffled, plan.partitions), orig));
  EXPECT_THROW(restore_results_order(at::zeros({3}), plan.partitions), Error);
}

TEST(RlBalancePacking, FiveMicroBatchesSmallAtBothEnds) {
  std::vector<int64_t> lens{512, 1024, 256, 2048, 128, 768, 1536, 384, 896, 640};
  SequencePackingParams p;
  p.max_packed_sequence_length = 4096;
  p.min_num_micro_batches = 5;
  EXPECT_EQ(packing_num_micro_batches(lens, 2048, p), 5);
  PackingPlan plan = load_balance_pack(lens, 2048, 5, p, true);
  EXPECT_EQ(plan.partitions, (Partitions{{1, 7}, {6}, {3}, {2, 5, 9}, {0, 4, 8}}));
  EXPECT_TRUE(plan.metrics.contains("train/seq_len_balance_ratio"));
}

TEST(RlBalancePacking, PadFactorVppAndErrors) {
  EXPECT_EQ(packing_pad_factor(1, 1), 16);
  EXPECT_EQ(packing_pad_factor(4, 1), 16);
  EXPECT_EQ(packing_pad_factor(2, 3), 48);  // lcm(16, 2·3·2)
  SequencePackingParams p;
  p.max_packed_sequence_length = 100;
  p.vp_size = 2;
  p.pp_size = 4;
  EXPECT_EQ(load_balance_pack({10, 20, 30, 40, 50}, 64, 3, p, true).num_micro_batches, 4);
  EXPECT_THROW(load_balance_pack({10, 20}, 64, 3, p, true), Error);
  EXPECT_THROW(packing_num_micro_batches({10}, 128, p), Error);  // packed length below the padded width
  EXPECT_THROW(inverse_permutation({0, 0}), Error);
}

}  // namespace
}  // namespace roll::rl
