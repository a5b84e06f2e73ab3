// Idle slots per phase from a placement plan (config/slot_usage.h), as `roll validate` prints them.
#include <gtest/gtest.h>

#include "roll/config/slot_usage.h"

namespace roll::config {
namespace {

ClusterPlacement cluster(const std::string& name, std::vector<int> devices, bool cpu_only = false) {
  ClusterPlacement c;
  c.name = name;
  c.cpu_only = cpu_only;
  for (size_t r = 0; r < devices.size(); ++r) {
    WorkerPlacement w;
    w.name = name + "-" + std::to_string(r);
    w.rank = static_cast<int>(r);
    w.devices = {devices[r]};
    c.workers.push_back(w);
  }
  return c;
}

PlacementPlan plan_of(std::vector<ClusterPlacement> clusters) {
  PlacementPlan p;
  p.platform = Platform::cpu;
  p.devices_per_node = 2;
  p.clusters = std::move(clusters);
  return p;
}

TEST(ConfigSlotUsage, SeparateActorsLeaveOneSlotIdleInGenerateAndTrain) {
  PipelineConfig c;
  c.kind = PipelineKind::rlvr;
  auto plan = plan_of({cluster("actor_train", {0}), cluster("actor_infer", {1}), cluster("reward-math", {}, true)});
  const auto phases = phase_slot_usage(c, plan);
  ASSERT_EQ(phases.size(), 2u);  // no reference, no critic, no recompute: no log-prob phase
  EXPECT_EQ(phases[0].phase, "generate");
  EXPECT_EQ(phases[0].idle, (std::vector<std::string>{"node 0 device 0 (holds actor_train)"}));
  EXPECT_EQ(phases[1].phase, "train");
  EXPECT_EQ(phases[1].idle, (std::vector<std::string>{"node 0 device 1 (holds actor_infer)"}));
  const auto advice = idle_slot_advice(c, plan);
  ASSERT_EQ(advice.size(), 3u);
  EXPECT_NE(advice[2].find("list(range(0,2))"), std::string::npos) << advice[2];
}

TEST(ConfigSlotUsage, ColocatedActorsUseEverySlotInEveryPhase) {
  PipelineConfig c;
  c.kind = PipelineKind::agentic;
  c.enable_old_logprobs_recompute = true;
  auto plan = plan_of({cluster("actor_train", {0, 1}), cluster("actor_infer", {0, 1}), cluster("train_env", {}, true)});
  const auto phases = phase_slot_usage(c, plan);
  ASSERT_EQ(phases.size(), 3u);
  EXPECT_EQ(phases[0].phase, "rollout");
  EXPECT_EQ(phases[1].phase, "log_probs");
  EXPECT_EQ(phases[1].clusters, (std::vector<std::string>{"actor_train"}));
  for (const auto& p : phases) EXPECT_TRUE(p.idle.empty()) << p.phase;
  EXPECT_TRUE(idle_slot_advice(c, plan).empty());
}

TEST(ConfigSlotUsage, AdviceIsForCpuAndNotForSft) {
  PipelineConfig c;
  c.kind = PipelineKind::rlvr;
  auto plan = plan_of({cluster("actor_train", {0}), cluster("actor_infer", {1})});
  plan.platform = Platform::cuda;
  EXPECT_FALSE(phase_slot_usage(c, plan).empty());  // the analysis holds anywhere
  EXPECT_TRUE(idle_slot_advice(c, plan).empty());   // the advice is about CPU cores
  c.kind = PipelineKind::sft;
  EXPECT_TRUE(phase_slot_usage(c, plan).empty());
}

}  // namespace
}  // namespace roll::config
