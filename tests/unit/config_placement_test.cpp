// PlacementPlan: device ids -> nodes, local ids, visibility variables, environment.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config_test_util.h"
#include "roll/config/placement.h"

using namespace roll;
using namespace roll::config;

namespace {

PipelineConfig two_nodes_of_four() {
  PipelineConfig c;
  c.kind = PipelineKind::rlvr;
  c.num_gpus_per_node = 4;
  c.num_nodes = 2;
  c.init_kl_coef = 0;
  c.adv_estimator = "grpo";
  c.actor_train.strategy_args.emplace();
  c.actor_train.device_mapping = std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7};
  c.actor_train.world_size = 8;
  c.actor_infer.strategy_args.emplace();
  c.actor_infer.strategy_args->strategy_name = "vllm";
  c.actor_infer.device_mapping = std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7};
  c.actor_infer.num_gpus_per_worker = 2;
  c.actor_infer.world_size = 4;
  RewardConfig r;
  r.worker.world_size = 3;
  r.worker.num_gpus_per_worker = 0;
  c.rewards.emplace_back("math_rule", r);
  return c;
}

}  // namespace

// ROLL's tests/distributed/scheduler/test_resource_manager.py (tests/).
TEST(ConfigPlacement, ResourceManagerVectors) {
  auto plan = make_placement_plan(two_nodes_of_four(), Platform::cuda);
  const auto* train = plan.find("actor_train");
  ASSERT_TRUE(train);
  ASSERT_EQ(train->workers.size(), 8u);
  EXPECT_EQ(train->workers[4].node, 1);  // one device per worker: worker 4 on node 1 gpu 0
  EXPECT_EQ(train->workers[4].local_devices, std::vector<int>{0});
  const auto* infer = plan.find("actor_infer");
  ASSERT_EQ(infer->workers.size(), 4u);
  EXPECT_EQ(infer->workers[2].node, 1);  // two per worker: worker 2 = node 1 gpus [0,1]
  EXPECT_EQ(infer->workers[2].local_devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(infer->workers[2].name, "actor_infer-2-G01");
  const auto* reward = plan.find("reward-math_rule");
  ASSERT_EQ(reward->workers.size(), 3u);  // CPU workers spread: nodes [0,1,0]
  EXPECT_EQ(reward->workers[0].node, 0);
  EXPECT_EQ(reward->workers[1].node, 1);
  EXPECT_EQ(reward->workers[2].node, 0);
  EXPECT_TRUE(reward->cpu_only);
}

TEST(ConfigPlacement, VisibilityVariableAndEnvironment) {
  auto c = two_nodes_of_four();
  c.system_envs = {{"GLOBAL", "g"}};
  c.actor_infer.system_envs = {{"GLOBAL", "g"}, {"ONLY_INFER", "1"}};
  auto plan = make_placement_plan(c, Platform::npu_emulated);
  const auto& w = plan.find("actor_infer")->workers[3];  // devices 6,7 -> node 1, local 2,3
  auto env = [&](const std::string& k) {
    for (const auto& [key, v] : w.env)
      if (key == k) return v;
    return std::string("<unset>");
  };
  EXPECT_EQ(env("ASCEND_RT_VISIBLE_DEVICES"), "2,3");
  EXPECT_EQ(env("CUDA_VISIBLE_DEVICES"), "<unset>");
  EXPECT_EQ(env("RANK"), "3");
  EXPECT_EQ(env("WORLD_SIZE"), "4");
  EXPECT_EQ(env("WORKER_NAME"), "actor_infer-3-G23");
  EXPECT_EQ(env("ONLY_INFER"), "1");
  auto cpu = make_placement_plan(c, Platform::cpu);
  for (const auto& [k, v] : cpu.find("actor_infer")->workers[0].env) {
    EXPECT_NE(k, "CUDA_VISIBLE_DEVICES");
    EXPECT_NE(k, "ASCEND_RT_VISIBLE_DEVICES");
  }
}

TEST(ConfigPlacement, NotStartedClustersAreMarked) {
  auto c = two_nodes_of_four();
  c.reference.strategy_args.emplace();
  c.reference.device_mapping = std::vector<int>{4, 5};
  c.reference.world_size = 2;
  auto plan = make_placement_plan(c, Platform::cuda);
  const auto* ref = plan.find("reference");
  ASSERT_TRUE(ref);
  EXPECT_FALSE(ref->started);
  EXPECT_NE(ref->note.find("init_kl_coef 0"), std::string::npos) << ref->note;
  EXPECT_EQ(plan.find("critic"), nullptr);
  auto text = format_placement_plan(plan, false);
  EXPECT_NE(text.find("[not started]"), std::string::npos);
}

TEST(ConfigPlacement, PlatformRulesTable) {
  EXPECT_EQ(platform_rules(Platform::npu).visibility_var, "ASCEND_RT_VISIBLE_DEVICES");
  EXPECT_EQ(platform_rules(Platform::npu_emulated).backend, "hccl");
  EXPECT_FALSE(platform_rules(Platform::npu).colocation_allowed);
  EXPECT_TRUE(platform_rules(Platform::npu_emulated).cast_int64_to_int32);
  EXPECT_EQ(platform_rules(Platform::cuda).visibility_var, "CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(platform_rules(Platform::cuda).backend, "nccl");
  EXPECT_EQ(platform_rules(Platform::cpu).backend, "gloo");
  EXPECT_TRUE(platform_rules(Platform::cpu).visibility_var.empty());
  EXPECT_EQ(parse_platform("npu-emulated"), Platform::npu_emulated);
  EXPECT_THROW(parse_platform("tpu"), ConfigError);
}

// Device counts come from the device nodes (nvidia<N> / davinci<N>, not nvidiactl or
// davinci_manager); cpu and npu-emulated have none to count.
TEST(ConfigPlacement, DetectedDeviceCountFromDeviceNodes) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("roll-dev-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const char* f : {"nvidia0", "nvidia1", "nvidia7", "nvidiactl", "nvidia-uvm", "davinci0", "davinci_manager"})
    std::ofstream(dir / f) << "";
  EXPECT_EQ(roll::config::detected_device_count(roll::config::Platform::cuda, dir.string()), 3);
  EXPECT_EQ(roll::config::detected_device_count(roll::config::Platform::npu, dir.string()), 1);
  EXPECT_FALSE(roll::config::detected_device_count(roll::config::Platform::cpu, dir.string()).has_value());
  EXPECT_FALSE(roll::config::detected_device_count(roll::config::Platform::npu_emulated, dir.string()).has_value());
  std::filesystem::remove_all(dir);
}
