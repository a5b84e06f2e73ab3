// The rule reward workers (docs/rewards.md, "Rule rewards") as real processes: the reward role
// reads response_text, ground_truth, tag and the responses width the driver sends, and returns
// scores, response_level_rewards, reward_info and its metrics (expected values worked out by hand
// from ROLL's rules; the per-case tables are in reward_crossthinkqa_test / reward_ifeval_test).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "roll/core/batch.h"
#include "roll/runtime/runtime.h"
#include "unit/multiprocess.h"
#include "unit/worker_runtime.h"

namespace roll::workers {
namespace {

runtime::ClusterSpec rule_worker(const std::string& cluster, nlohmann::json options) {
  runtime::ClusterSpec spec;
  spec.placement.name = cluster;
  config::WorkerPlacement w;
  w.name = cluster + "-0";
  spec.placement.workers.push_back(w);
  spec.placement.cpu_only = true;
  spec.role = "reward";
  spec.options = std::move(options);
  return spec;
}

Batch texts(const std::vector<std::string>& responses, const std::vector<std::string>& truths,
            const std::vector<std::string>& tags) {
  Batch b(static_cast<int64_t>(responses.size()));
  NonTensorColumn r, g, t;
  for (size_t i = 0; i < responses.size(); ++i) {
    r.push_back(responses[i]);
    g.push_back(truths[i]);
    t.push_back(tags[i]);
  }
  b.set_column("response_text", r);
  b.set_column("ground_truth", g);
  b.set_column("tag", t);
  return b;
}

TEST(WorkersRuleReward, CrossThinkQaScoresShapesAndReadsTheResponsesWidth) {
  const std::string dir = test::make_scratch_dir();
  runtime::Runtime rt(test::worker_runtime_options(dir));
  auto w = rt.start(rule_worker("reward-ctq", {{"reward_type", "crossthinkqa"},
                                                {"rule_reward_type", "soft"},
                                                {"response_length_penalty_coef", 0.5}}));
  Batch b = texts({"The answer is \\boxed{B}.<|im_end|>", "\\boxed{C}", "so the answer is B"}, {"B", "B", "B"},
                  {"crossthinkqa", "crossthinkqa", "crossthinkqa"});
  b.meta["responses_width"] = 250;  // length reward -0.5 * (400 - 250) / 300 = -0.25, times 0.5
  runtime::Payload out = w->call("compute_rewards", runtime::Dispatch::dp_mp_compute, runtime::Payload(b)).get();
  ASSERT_TRUE(out.batch);
  const at::Tensor s = out.batch->tensor("scores"), r = out.batch->tensor("response_level_rewards");
  // correct + boxed: 1; boxed, wrong: -0.5; correct, not boxed: 0.5 (soft). No 3-gram repeats.
  EXPECT_EQ(s[0].item<float>(), 1.f);
  EXPECT_EQ(s[1].item<float>(), 0.f);
  EXPECT_EQ(s[2].item<float>(), 1.f);
  EXPECT_EQ(r[0].item<float>(), 0.875f);
  EXPECT_EQ(r[1].item<float>(), -0.625f);
  EXPECT_EQ(r[2].item<float>(), 0.375f);
  EXPECT_EQ(out.batch->cell("reward_info", 1)["extracted"], "C");
  EXPECT_EQ(out.batch->meta["metrics"]["ctq/crossthinkqa/format"].size(), 3u);
  w->shutdown();
  std::filesystem::remove_all(dir);
}

TEST(WorkersRuleReward, IfevalChecksTaggedSamplesOnly) {
  const std::string dir = test::make_scratch_dir();
  runtime::Runtime rt(test::worker_runtime_options(dir));
  auto w = rt.start(rule_worker("reward-if", {{"reward_type", "ifeval"}}));
  const std::string lower = R"({"func_name": "validate_lowercase"})";
  Batch b = texts({"all lower here", "NOT LOWER", "all lower here"}, {lower, lower, lower}, {"ifeval", "ifeval", "math"});
  runtime::Payload out = w->call("compute_rewards", runtime::Dispatch::dp_mp_compute, runtime::Payload(b)).get();
  ASSERT_TRUE(out.batch);
  const at::Tensor s = out.batch->tensor("scores");
  EXPECT_EQ(s[0].item<float>(), 1.f);
  EXPECT_EQ(s[1].item<float>(), 0.f);
  EXPECT_EQ(s[2].item<float>(), 0.f);
  EXPECT_EQ(out.batch->cell("reward_info", 2)["outcome"], "unknown_tag");
  const auto unchecked = out.batch->meta["metrics"]["if/ifeval/unchecked"];
  EXPECT_EQ(unchecked, nlohmann::json({0.0, 0.0, 1.0}));
  w->shutdown();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace roll::workers
