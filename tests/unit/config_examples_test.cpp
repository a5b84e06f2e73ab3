// The seed's configs (examples/) and ROLL's own examples (../shared/roll-examples).
#include <gtest/gtest.h>

#include <filesystem>

#include "config_test_util.h"
#include "roll/config/placement.h"

using namespace roll;
using namespace roll::config;
using roll::testing::error_of;
using roll::testing::shared_examples_dir;
using roll::testing::source_dir;

namespace fs = std::filesystem;

namespace {

LoadedConfig load_example(const std::string& dir, const std::string& name, Platform platform,
                          std::optional<int> devices = std::nullopt, std::vector<std::string> overrides = {}) {
  LoadRequest req;
  req.compose = {dir, name, std::move(overrides)};
  req.platform = platform;
  req.devices_per_node = devices;
  return load_config(req);
}

std::string ascend() { return source_dir() + "/examples/ascend_examples"; }

std::vector<int> devices_of(const ClusterPlacement& c) {
  std::vector<int> all;
  for (const auto& w : c.workers) all.insert(all.end(), w.devices.begin(), w.devices.end());
  return all;
}

std::vector<int> range(int a, int b) {
  std::vector<int> v;
  for (int i = a; i < b; ++i) v.push_back(i);
  return v;
}

bool has_warning(const LoadedConfig& c, const std::string& needle) {
  for (const auto& w : c.warnings)
    if (w.message.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(ConfigExamples, SeedAgenticOnNpu) {
  auto l = load_example(ascend(), "agentic_frozen_lake_npu", Platform::npu, 8);
  auto plan = make_placement_plan(l.config, l.platform);
  EXPECT_EQ(devices_of(*plan.find("actor_train")), range(0, 4));
  EXPECT_EQ(devices_of(*plan.find("actor_infer")), range(4, 8));
  const auto* ref = plan.find("reference");
  ASSERT_TRUE(ref);
  EXPECT_EQ(devices_of(*ref), range(4, 8));
  EXPECT_FALSE(ref->started);  // init_kl_coef 0, use_kl_loss false
  EXPECT_EQ(plan.find("train_env")->workers.size(), 64u);  // 128 x 8 envs / 16 per worker
  EXPECT_EQ(plan.find("val_env")->workers.size(), 32u);
  EXPECT_EQ(l.config.actor_infer.generating_args->max_new_tokens, 128);
  // strategy_config: ${deepspeed_zero3} from the includes
  EXPECT_EQ(l.config.actor_train.strategy_args->strategy_config->get("zero_optimization")->get("stage")->text(), "3");
  for (const auto& w : plan.find("actor_infer")->workers)
    for (const auto& [k, v] : w.env) EXPECT_NE(k, "CUDA_VISIBLE_DEVICES");
}

TEST(ConfigExamples, SeedAgenticOnNpuRefusesColocationAndMegatron) {
  auto msg = error_of([] {
    load_example(ascend(), "agentic_frozen_lake_npu", Platform::npu, 8, {"actor_infer.device_mapping=list(range(0,4))"});
  });
  EXPECT_NE(msg.find("0-3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("actor_infer.device_mapping"), std::string::npos) << msg;
  msg = error_of([] {
    load_example(ascend(), "agentic_frozen_lake_npu", Platform::npu, 8,
                 {"actor_train.strategy_args.strategy_name=megatron_train"});
  });
  EXPECT_NE(msg.find("megatron_train"), std::string::npos) << msg;
}

void check_seed_example2(const LoadedConfig& l) {
  auto plan = make_placement_plan(l.config, l.platform);
  EXPECT_EQ(devices_of(*plan.find("actor_train")), range(0, 8));
  EXPECT_EQ(devices_of(*plan.find("actor_infer")), range(8, 12));
  EXPECT_EQ(devices_of(*plan.find("reference")), range(12, 16));
  const auto* math = plan.find("reward-math_rule");
  ASSERT_TRUE(math);
  EXPECT_TRUE(math->cpu_only);
  EXPECT_EQ(math->workers.size(), 8u);
  EXPECT_TRUE(has_warning(l, "max_model_len (8000)"));
  EXPECT_TRUE(has_warning(l, "sequence_length (10240)"));
  EXPECT_EQ(plan.num_nodes, 1);
}

TEST(ConfigExamples, SeedRlvrExample2On16Npus) {
  check_seed_example2(load_example(ascend(), "qwen3_8b_rlvr_deepspeed", Platform::npu, 16));
}

TEST(ConfigExamples, RollAscendRlvrDeepspeedOn16Npus) {
  const std::string dir = shared_examples_dir() + "/ascend_examples";
  if (!fs::exists(dir + "/qwen3_8b_rlvr_deepspeed.yaml")) GTEST_SKIP() << "../shared/roll-examples not present";
  auto l = load_example(dir, "qwen3_8b_rlvr_deepspeed", Platform::npu, 16);
  check_seed_example2(l);
  // `flash_attn: fa2` in ROLL's own NPU file only gets the unknown-key warning.
  EXPECT_TRUE(has_warning(l, "actor_train.model_args.flash_attn"));
}

TEST(ConfigExamples, SeedTwoNodePatterns) {
  auto l = load_example(ascend(), "rlvr_npu_multinode", Platform::npu, 8);
  auto plan = make_placement_plan(l.config, l.platform);
  EXPECT_EQ(plan.num_nodes, 2);
  for (const auto& w : plan.find("actor_train")->workers) EXPECT_EQ(w.node, 0);
  for (const char* c : {"actor_infer", "reference"})
    for (const auto& w : plan.find(c)->workers) {
      EXPECT_EQ(w.node, 1) << c;
      EXPECT_EQ(w.local_devices.size(), 1u);
      EXPECT_LT(w.local_devices[0], 8);
    }
  EXPECT_TRUE(plan.find("reference")->started);  // init_kl_coef defaults to 0.2

  auto p2 = load_example(ascend(), "rlvr_npu_multinode", Platform::npu, 8,
                         {"actor_train.device_mapping=list(range(0,4)) + list(range(8,12))",
                          "actor_infer.device_mapping=list(range(4,8)) + list(range(12,16))",
                          "reference.device_mapping=list(range(4,8)) + list(range(12,16))"});
  auto plan2 = make_placement_plan(p2.config, p2.platform);
  for (const char* c : {"actor_train", "actor_infer"}) {
    int node0 = 0, node1 = 0;
    for (const auto& w : plan2.find(c)->workers) (w.node == 0 ? node0 : node1)++;
    EXPECT_EQ(node0, 4) << c;
    EXPECT_EQ(node1, 4) << c;
  }
  EXPECT_EQ(plan2.find("actor_infer")->workers[4].local_devices, std::vector<int>{4});
}

TEST(ConfigExamples, ProjectExamplesValidate) {
  for (const auto& e : fs::recursive_directory_iterator(source_dir() + "/examples")) {
    if (e.path().extension() != ".yaml" || e.path().parent_path().filename() == "config") continue;
    const std::string dir = e.path().parent_path().string();
    const Platform p = dir.find("ascend") != std::string::npos ? Platform::npu : Platform::cpu;
    EXPECT_NO_THROW(load_example(dir, e.path().stem().string(), p)) << e.path();
  }
}

// Every ROLL example either validates or fails with a roll::Error (never a crash or another
// exception); the outcome of each is printed for docs/compat.md.
TEST(ConfigExamples, EveryRollExampleValidatesOrFailsClearly) {
  const std::string root = shared_examples_dir();
  if (!fs::exists(root)) GTEST_SKIP() << "../shared/roll-examples not present";
  int ok = 0, refused = 0;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.path().extension() == ".yaml" && e.path().parent_path().filename() != "config") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const std::string dir = f.parent_path().string();
    const Platform p = dir.find("ascend") != std::string::npos ? Platform::npu : Platform::cuda;
    try {
      load_example(dir, f.stem().string(), p);
      ++ok;
      std::printf("OK       %s\n", fs::relative(f, root).c_str());
    } catch (const Error& e) {
      ++refused;
      std::string first = e.what();
      first = first.substr(0, first.find('\n'));
      EXPECT_FALSE(first.empty()) << f;
      std::printf("REFUSED  %s: %s\n", fs::relative(f, root).c_str(), first.c_str());
    } catch (const std::exception& e) {
      ADD_FAILURE() << f << ": not a roll::Error: " << e.what();
    }
  }
  std::printf("%d validated, %d refused with an error\n", ok, refused);
  // ROLL's agentic FrozenLake/Sokoban examples and the Ascend examples are among those that validate.
  EXPECT_GE(ok, 15);
  EXPECT_EQ(ok + refused, static_cast<int>(files.size()));
}
