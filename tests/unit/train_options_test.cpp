// ROLL worker config -> TrainOptions, including ROLL's historical deepspeed_zero*.yaml includes.
#include <gtest/gtest.h>

#include <filesystem>

#include "roll/config/node.h"
#include "roll/config/pipeline_config.h"
#include "roll/core/error.h"
#include "roll/train/options_from_config.h"

using namespace roll;

namespace {

config::NodePtr yaml(const std::string& text) { return config::parse_yaml_text(text, {}); }

config::WorkerConfig worker(const std::string& strategy, const std::string& strategy_config) {
  config::WorkerConfig w;
  w.name = "actor_train";
  w.strategy_args = config::StrategyArguments{strategy, strategy_config.empty() ? nullptr : yaml(strategy_config)};
  w.training_args.learning_rate = 1e-6;
  w.training_args.max_steps = 100;
  w.training_args.gradient_accumulation_steps = 4;
  w.training_args.per_device_train_batch_size = 2;
  w.training_args.warmup_steps = 5;
  return w;
}

}  // namespace

TEST(TrainOptionsFromConfig, TrainingArgumentsAndSchedule) {
  config::PipelineConfig p;
  p.max_grad_norm = 0.5;
  p.ppo_epochs = 2;
  p.seed = 9;
  p.max_ckpt_to_keep = 3;
  config::WorkerConfig w = worker("deepspeed_train", "");
  w.model_args.disable_gradient_checkpointing = true;
  auto o = train::train_options_from_config(p, p.max_grad_norm, w, 4, p.ppo_epochs);
  EXPECT_DOUBLE_EQ(o.learning_rate, 1e-6);
  EXPECT_EQ(o.total_steps, 25);  // max_steps / dp_size
  EXPECT_EQ(o.gradient_accumulation_steps, 4);
  EXPECT_EQ(o.per_device_train_batch_size, 2);
  EXPECT_EQ(o.warmup_steps, 5);
  EXPECT_DOUBLE_EQ(o.max_grad_norm, 0.5);
  EXPECT_EQ(o.ppo_epochs, 2);
  EXPECT_EQ(o.seed, 9u);
  EXPECT_EQ(o.max_ckpt_to_keep, 3);
  EXPECT_FALSE(o.gradient_checkpointing);
  EXPECT_EQ(o.zero_stage, 0);
}

TEST(TrainOptionsFromConfig, StrategyNamesSelectZeroStages) {
  config::PipelineConfig p;
  auto stage = [&](const std::string& s, const std::string& c) {
    return train::train_options_from_config(p, p.max_grad_norm, worker(s, c), 2, 1).zero_stage;
  };
  EXPECT_EQ(stage("deepspeed_train", "{zero_optimization: {stage: 2}}"), 2);
  EXPECT_EQ(stage("deepspeed_train", "{zero_optimization: {stage: 3}}"), 3);
  EXPECT_EQ(stage("fsdp2_train", ""), 3);
  EXPECT_EQ(stage("fsdp2_train", "{reshard_after_forward: false}"), 2);
  EXPECT_EQ(stage("megatron_train", ""), 0);
  EXPECT_EQ(stage("megatron_train", "{use_distributed_optimizer: true}"), 1);
  auto o = train::train_options_from_config(
      p, p.max_grad_norm, worker("fsdp2_train", "{fsdp_size: 2, reduce_dtype: bf16, offload_policy: true}"), 4, 1);
  EXPECT_TRUE(o.offload_optimizer);
  std::string notes;
  for (auto& n : o.notes) notes += n + "\n";
  EXPECT_NE(notes.find("HSDP"), std::string::npos) << notes;
  EXPECT_NE(notes.find("float32"), std::string::npos) << notes;
}

TEST(TrainOptionsFromConfig, ErrorsNameTheKey) {
  config::PipelineConfig p;
  try {
    train::train_options_from_config(p, p.max_grad_norm, worker("hf_infer", ""), 1, 1);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "actor_train.strategy_args.strategy_name");
  }
  config::WorkerConfig fp16 = worker("deepspeed_train", "");
  fp16.model_args.dtype = "fp16";
  EXPECT_THROW(train::train_options_from_config(p, p.max_grad_norm, fp16, 1, 1), ConfigError);
  EXPECT_THROW(train::train_options_from_config(p, p.max_grad_norm, worker("deepspeed_train", "{zero_optimization: {stage: 4}}"), 1, 1),
               ConfigError);
  EXPECT_THROW(train::train_options_from_config(p, p.max_grad_norm, worker("deepspeed_train", "{zero_optimization: {stage: two}}"), 1, 1),
               ConfigError);
}

TEST(TrainOptionsFromConfig, RollDeepspeedIncludes) {
  const std::filesystem::path dir = std::filesystem::path(ROLL_SOURCE_DIR) / ".." / "shared" / "roll-examples" / "config";
  if (!std::filesystem::exists(dir / "deepspeed_zero3_cpuoffload.yaml")) GTEST_SKIP() << "ROLL examples not present";
  config::PipelineConfig p;
  auto from = [&](const char* file) {
    config::NodePtr root = config::load_yaml_file((dir / (std::string(file) + ".yaml")).string());
    config::WorkerConfig w = worker("deepspeed_train", "");
    w.strategy_args->strategy_config = root->get(file);
    return train::train_options_from_config(p, p.max_grad_norm, w, 2, 1);
  };
  EXPECT_EQ(from("deepspeed_zero").zero_stage, 0);
  EXPECT_EQ(from("deepspeed_zero2").zero_stage, 2);
  EXPECT_EQ(from("deepspeed_zero3").zero_stage, 3);
  auto off = from("deepspeed_zero3_cpuoffload");
  EXPECT_EQ(off.zero_stage, 3);
  EXPECT_TRUE(off.offload_optimizer);
  ASSERT_FALSE(off.notes.empty());
  EXPECT_NE(off.notes[0].find("no-op"), std::string::npos);
}
