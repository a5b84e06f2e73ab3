// Typed loading, derived values and bad-input errors of ROLL configs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "config_test_util.h"
#include "roll/config/model_arch.h"
#include "roll/config/placement.h"
#include "roll/config/platform.h"
#include "roll/core/cpu_features.h"

using namespace roll;
using namespace roll::config;
using roll::testing::error_of;
using roll::testing::load_in;
using roll::testing::TempConfigDir;

namespace {

const char* kRlvr = roll::testing::kRlvrConfig;

const char* kAgentic = R"(defaults:
  - ../config/envs@_here_
exp_name: ag
num_gpus_per_node: 4
rollout_batch_size: 16
val_batch_size: 8
sequence_length: 1024
adv_estimator: grpo
init_kl_coef: 0.0
pretrain: /nonexistent/model
max_tokens_per_step: 64
actor_train:
  training_args: {per_device_train_batch_size: 2, gradient_accumulation_steps: 4}
  strategy_args: {strategy_name: fsdp2_train}
  device_mapping: list(range(0,2))
actor_infer:
  strategy_args: {strategy_name: vllm}
  device_mapping: list(range(2,4))
train_env_manager:
  max_env_num_per_worker: 4
  num_env_groups: 4
  group_size: 4
  tags: [FrozenLake]
  num_groups_partition: [4]
  generating_args: {max_new_tokens: 32, temperature: 0.99}
val_env_manager:
  max_env_num_per_worker: 8
  num_env_groups: 8
  group_size: 1
  tags: [FrozenLake, Sokoban]
  num_groups_partition: [4, 4]
custom_envs:
  FrozenLake: ${custom_env.FrozenLake}
  Sokoban: ${custom_env.Sokoban}
  WebShop: {env_type: webshop}
)";

const char* kEnvs = R"(max_tokens_per_step: 128
max_actions_per_traj: 10
custom_env:
  FrozenLake:
    env_type: frozen_lake
    max_steps: ${max_actions_per_traj}
    max_tokens_per_step: ${max_tokens_per_step}
    env_config: {is_slippery: false}
  Sokoban:
    env_type: sokoban
    max_steps: ${max_actions_per_traj}
    env_config: {dim_room: [6, 6], num_boxes: 1}
)";

struct Fixture {
  TempConfigDir dir;
  Fixture() {
    dir.write("exp/rlvr.yaml", kRlvr);
    dir.write("exp/agentic.yaml", kAgentic);
    dir.write("config/envs.yaml", kEnvs);
  }
  LoadedConfig rlvr(std::vector<std::string> o = {}, Platform p = Platform::cpu) {
    return load_in(dir, "exp", "rlvr", std::move(o), p);
  }
  LoadedConfig agentic(std::vector<std::string> o = {}, Platform p = Platform::cpu) {
    return load_in(dir, "exp", "agentic", std::move(o), p);
  }
};

bool has_warning(const LoadedConfig& c, const std::string& needle) {
  for (const auto& w : c.warnings)
    if (w.message.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(ConfigDerive, AsyncOnSeparateDevicesValidates) {
  Fixture f;
  EXPECT_DOUBLE_EQ(f.rlvr({"async_generation_ratio=2.5"}).config.async_generation_ratio, 2.5);
  EXPECT_DOUBLE_EQ(f.agentic({"async_generation_ratio=2"}).config.async_generation_ratio, 2.0);
}

TEST(ConfigDerive, RlvrDerivedValues) {
  Fixture f;
  auto l = f.rlvr();
  const auto& c = l.config;
  EXPECT_EQ(c.kind, PipelineKind::rlvr);
  EXPECT_EQ(c.sequence_length.value(), 128);  // prompt_length + response_length
  EXPECT_FALSE(c.response_length.has_value());
  EXPECT_EQ(c.val_sequence_length.value(), 128);
  EXPECT_EQ(c.val_prompt_length.value(), 64);
  EXPECT_EQ(c.actor_train.world_size.value(), 2);
  EXPECT_EQ(c.actor_infer.world_size.value(), 2);
  EXPECT_EQ(c.actor_train.num_gpus_per_worker, 1);
  EXPECT_EQ(c.rewards.at(0).second.worker.world_size.value(), 2);
  EXPECT_EQ(c.rewards.at(0).second.worker.num_gpus_per_worker, 0);
  // RLVR: actor_infer max_new_tokens = sequence_length - prompt_length, n copied from the group size.
  EXPECT_EQ(c.actor_infer.generating_args->max_new_tokens, 64);
  EXPECT_EQ(c.actor_infer.generating_args->num_return_sequences, 2);
  EXPECT_DOUBLE_EQ(c.actor_infer.generating_args->temperature, 0.7);
  EXPECT_EQ(c.actor_infer.max_concurrency, 1000);
  // pretrain fills all policy model paths.
  EXPECT_EQ(c.actor_train.model_args.model_name_or_path.value(), "/nonexistent/model");
  EXPECT_EQ(c.reference.model_args.model_name_or_path.value(), "/nonexistent/model");
  // init_kl_coef 0 and no kl loss: no reference. 8 prompts x 2 / dp 2 = 8 samples per rank over
  // micro 2 x GA 2 = 4 per optimizer step -> 2 backward steps -> recompute old log-probs.
  EXPECT_FALSE(c.enable_reference);
  EXPECT_TRUE(c.enable_old_logprobs_recompute);
  // LR schedule length: max_steps(500) * 16 samples * 1 epoch / 4 = 2000.
  EXPECT_EQ(c.actor_train.training_args.max_steps, 2000);
  EXPECT_TRUE(c.actor_train.training_args.bf16);  // dtype bf16 default
  EXPECT_EQ(c.actor_train.training_args.seed.value(), 42);
  // system_envs: top-level merged, worker wins.
  ASSERT_EQ(c.actor_train.system_envs.size(), 2u);
  EXPECT_EQ(c.actor_train.system_envs[1].second, "worker");
  EXPECT_EQ(c.actor_infer.system_envs[1].second, "2");
  EXPECT_EQ(c.num_nodes, 1);
}

TEST(ConfigDerive, KlDefaultsEnableReferenceAndRecompute) {
  Fixture f;
  auto l = f.rlvr({"~init_kl_coef"});  // ROLL's default 0.2 (quirk 2, reproduced)
  EXPECT_DOUBLE_EQ(l.config.init_kl_coef, 0.2);
  EXPECT_TRUE(l.config.enable_reference);
  EXPECT_TRUE(l.config.enable_old_logprobs_recompute);
  auto k = f.rlvr({"use_kl_loss=true", "kl_loss_coef=0.01"});
  EXPECT_TRUE(k.config.enable_reference);
}

TEST(ConfigDerive, RecomputeOffWhenOneBackwardStepPerRank) {
  Fixture f;
  auto l = f.rlvr({"actor_train.training_args.gradient_accumulation_steps=4"});  // 8 per rank / (2*4) = 1
  EXPECT_FALSE(l.config.enable_old_logprobs_recompute);
  auto g = f.rlvr({"actor_train.training_args.gradient_accumulation_steps=4", "adv_estimator=gigpo"});
  EXPECT_TRUE(g.config.enable_old_logprobs_recompute);
  auto d = f.rlvr({"force_disable_old_logprobs_recompute=true"});
  EXPECT_FALSE(d.config.enable_old_logprobs_recompute);
}

TEST(ConfigDerive, SequenceLengthAndValidationLengths) {
  Fixture f;
  auto l = f.rlvr({"response_length=null", "sequence_length=100", "val_prompt_length=32", "val_sequence_length=96",
                   "+validation.data_args.template=qwen2_5"});
  EXPECT_EQ(l.config.sequence_length.value(), 100);
  EXPECT_EQ(l.config.actor_infer.generating_args->max_new_tokens, 36);
  EXPECT_EQ(l.config.validation->generating_args->max_new_tokens, 64);
}

TEST(ConfigDerive, PretrainOverwritesWithWarningAndCriticUsesRewardPretrain) {
  Fixture f;
  auto l = f.rlvr({"actor_train.model_args.model_name_or_path=/other", "adv_estimator=gae",
                   "reward_pretrain=/critic/model", "critic.device_mapping=list(range(0,2))",
                   "critic.strategy_args.strategy_name=fsdp2_train"});
  EXPECT_EQ(l.config.actor_train.model_args.model_name_or_path.value(), "/nonexistent/model");
  EXPECT_TRUE(has_warning(l, "actor_train.model_args.model_name_or_path"));
  EXPECT_EQ(l.config.critic.model_args.model_name_or_path.value(), "/critic/model");
  EXPECT_EQ(l.config.critic.world_size.value(), 2);
}

TEST(ConfigDerive, UnknownKeysAreOneWarningNamingThem) {
  Fixture f;
  auto l = f.rlvr({"+typo_key=1", "+actor_train.model_args.flash_attn=fa2"});
  int n = 0;
  for (const auto& w : l.warnings)
    if (w.message.find("unknown key") != std::string::npos) {
      ++n;
      EXPECT_NE(w.message.find("typo_key"), std::string::npos);
      EXPECT_NE(w.message.find("actor_train.model_args.flash_attn"), std::string::npos);
    }
  EXPECT_EQ(n, 1);
}

TEST(ConfigDerive, VariablesAndIncludedHelperKeysAreNotUnknown) {
  Fixture f;
  auto l = f.agentic();
  for (const auto& w : l.warnings) {
    EXPECT_EQ(w.message.find("max_actions_per_traj"), std::string::npos) << w.message;
    EXPECT_EQ(w.message.find("custom_env "), std::string::npos) << w.message;
  }
}

TEST(ConfigDerive, DeepSpeedIncludesBecomeStrategyConfig) {
  TempConfigDir d;
  d.write("config/deepspeed_zero3.yaml", "deepspeed_zero3:\n  zero_optimization:\n    stage: 3\n");
  std::string text = std::string("defaults:\n  - ../config/deepspeed_zero3@_here_\n") + kRlvr;
  text.replace(text.find("{strategy_name: deepspeed_train, strategy_config: {zero_optimization: {stage: 2}}}"),
               std::string("{strategy_name: deepspeed_train, strategy_config: {zero_optimization: {stage: 2}}}").size(),
               "{strategy_name: deepspeed_train, strategy_config: '${deepspeed_zero3}'}");
  d.write("exp/main.yaml", text);
  auto l = load_in(d, "exp", "main");
  auto sc = l.config.actor_train.strategy_args->strategy_config;
  ASSERT_TRUE(sc && sc->is_map());
  EXPECT_EQ(sc->get("zero_optimization")->get("stage")->text(), "3");
}

TEST(ConfigDerive, AgenticDerivedValues) {
  Fixture f;
  auto l = f.agentic();
  const auto& c = l.config;
  EXPECT_EQ(c.kind, PipelineKind::agentic);
  // generating_args flow from the train env manager to actor_infer; n forced to 1.
  EXPECT_EQ(c.actor_infer.generating_args->max_new_tokens, 32);
  EXPECT_EQ(c.actor_infer.generating_args->num_return_sequences, 1);
  // traj_per_env = ceil(16 / (4 groups * 4)) = 1; env workers = ceil(16 envs / 4) = 4 and ceil(8 / 8) = 1.
  EXPECT_EQ(c.train_env_manager.max_traj_per_env, 1);
  EXPECT_EQ(c.train_env_manager.worker.world_size.value(), 4);
  EXPECT_EQ(c.val_env_manager.worker.world_size.value(), 1);
  EXPECT_EQ(c.train_env_manager.worker.model_args.model_name_or_path.value(), "/nonexistent/model");
  // custom_envs picked up the primary file's max_tokens_per_step (64) through the include.
  NodePtr fl;
  for (const auto& [t, s] : c.custom_envs)
    if (t == "FrozenLake") fl = s;
  ASSERT_TRUE(fl);
  EXPECT_EQ(fl->get("max_tokens_per_step")->text(), "64");
  EXPECT_EQ(fl->get("max_steps")->text(), "10");
  EXPECT_EQ(c.actor_infer.max_concurrency, 1000);
}

TEST(ConfigDerive, AgenticActorInferGeneratingArgsWinAndMaxConcurrencyGrows) {
  Fixture f;
  auto l = f.agentic({"+actor_infer.generating_args.max_new_tokens=16", "train_env_manager.max_env_num_per_worker=16",
                      "train_env_manager.num_env_groups=400", "train_env_manager.num_groups_partition=[400]",
                      "rollout_batch_size=1600"});
  EXPECT_EQ(l.config.train_env_manager.worker.generating_args->max_new_tokens, 16);
  EXPECT_EQ(l.config.val_env_manager.worker.generating_args->max_new_tokens, 16);
  EXPECT_EQ(l.config.actor_infer.max_concurrency, 100 * 16 + 1);  // 1600 envs / 16 per worker = 100 workers
}

TEST(ConfigDerive, ValBatchSizeMinusOneIsUnlimited) {
  Fixture f;
  EXPECT_EQ(f.agentic({"val_batch_size=-1"}).config.val_batch_size, -1);
}

TEST(ConfigDerive, SftConfig) {
  TempConfigDir d;
  d.write("exp/sft.yaml", R"(exp_name: s
sequence_length: 256
pretrain: /m
prompt_key: instruction
query_key: input
response_key: output
validation: {data_args: {file_name: v.json, template: qwen2_5}}
sft_train:
  training_args: {per_device_train_batch_size: 2, gradient_accumulation_steps: 2}
  data_args: {file_name: d.json, template: qwen2_5}
  strategy_args: {strategy_name: fsdp2_train}
  device_mapping: list(range(0,1))
)");
  auto l = load_in(d, "exp", "sft");
  EXPECT_EQ(l.config.kind, PipelineKind::sft);
  EXPECT_EQ(l.config.sft_train.model_args.model_name_or_path.value(), "/m");
  EXPECT_EQ(l.config.sft_train.world_size.value(), 1);
}

// --- bad input: each message names the key at fault ----------------------------------------

struct BadCase {
  const char* name;
  std::vector<std::string> overrides;
  const char* key;  // must appear in the message
  bool agentic = false;
  Platform platform = Platform::cpu;
};

class ConfigDeriveBadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(ConfigDeriveBadInput, ErrorNamesTheKey) {
  Fixture f;
  const auto& c = GetParam();
  auto msg = error_of([&] { c.agentic ? f.agentic(c.overrides, c.platform) : f.rlvr(c.overrides, c.platform); });
  EXPECT_NE(msg.find(c.key), std::string::npos) << c.name << ": " << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ConfigDeriveBadInput,
    ::testing::Values(
        BadCase{"int_type", {"rollout_batch_size=abc"}, "rollout_batch_size"},
        BadCase{"int_not_integral", {"seed=1.5"}, "'seed'"},
        BadCase{"float_type", {"actor_train.training_args.learning_rate=fast"}, "actor_train.training_args.learning_rate"},
        BadCase{"bool_type", {"whiten_advantages=maybe"}, "whiten_advantages"},
        BadCase{"map_expected", {"actor_train=5"}, "'actor_train'"},
        BadCase{"list_expected", {"rewards.math_rule.tag_included={a: 1}"}, "rewards.math_rule.tag_included"},
        BadCase{"adv_estimator", {"adv_estimator=ppo2"}, "adv_estimator"},
        BadCase{"loss_agg_mode", {"loss_agg_mode=mean"}, "loss_agg_mode"},
        BadCase{"kl_penalty", {"kl_penalty=k9"}, "kl_penalty"},
        BadCase{"norm_type", {"norm_mean_type=median"}, "norm_mean_type"},
        BadCase{"device_mapping_syntax", {"actor_train.device_mapping='list(range(0,'"}, "actor_train.device_mapping"},
        BadCase{"device_mapping_dup", {"actor_train.device_mapping=[0,0]"}, "actor_train.device_mapping"},
        BadCase{"infer_strategy", {"actor_infer.strategy_args.strategy_name=hf_infer"},
                "actor_infer.strategy_args.strategy_name"},
        BadCase{"train_strategy_is_inference", {"actor_train.strategy_args.strategy_name=vllm"},
                "actor_train.strategy_args.strategy_name"},
        BadCase{"unknown_strategy", {"actor_train.strategy_args.strategy_name=foo"},
                "actor_train.strategy_args.strategy_name"},
        BadCase{"megatron_tp_batch_does_not_split",
                {"actor_train.strategy_args.strategy_name=megatron_train",
                 "actor_train.strategy_args.strategy_config={tensor_model_parallel_size: 2, "
                 "pipeline_model_parallel_size: 2}",
                 "actor_train.device_mapping=list(range(0,4))", "actor_train.training_args.gradient_accumulation_steps=1"},
                "gradient_accumulation_steps"},
        BadCase{"megatron_tp_devices_do_not_split",
                {"actor_train.strategy_args.strategy_name=megatron_train",
                 "actor_train.strategy_args.strategy_config={tensor_model_parallel_size: 4}"},
                "actor_train.device_mapping"},
        BadCase{"zero_stage", {"actor_train.strategy_args.strategy_config.zero_optimization.stage=5"},
                "zero_optimization.stage"},
        BadCase{"dtype", {"actor_train.model_args.dtype=fp8"}, "actor_train.model_args.dtype"},
        BadCase{"async_below_one", {"async_generation_ratio=0.5"}, "async_generation_ratio"},
        BadCase{"async_colocated", {"async_generation_ratio=1", "actor_infer.device_mapping=list(range(0,2))"},
                "actor_infer.device_mapping"},
        BadCase{"async_level0", {"async_generation_ratio=1", "generate_opt_level=0"}, "generate_opt_level"},
        BadCase{"ag_async_fraction", {"async_generation_ratio=1.5"}, "async_generation_ratio", true},
        BadCase{"ag_async_colocated",
                {"async_generation_ratio=1", "actor_train.device_mapping=list(range(0,2))",
                 "actor_infer.device_mapping=list(range(0,2))"},
                "actor_infer.device_mapping", true},
        BadCase{"val_lengths_pair", {"val_prompt_length=10"}, "val_sequence_length"},
        BadCase{"domain_without_reward", {"actor_train.data_args.domain_interleave_probs={code: 1}"},
                "domain_interleave_probs.code"},
        BadCase{"no_rewards", {"~rewards"}, "rewards"},
        BadCase{"messages_and_prompt", {"actor_train.data_args.prompt=text"}, "actor_train.data_args.messages"},
        BadCase{"template", {"actor_train.data_args.template=llama9"}, "actor_train.data_args.template"},
        BadCase{"reward_worker", {"rewards.math_rule.worker_cls=x.IfevalRuleRewardWorker"}, "rewards.math_rule.worker_cls"},
        BadCase{"judge_api", {"rewards.math_rule.judge_model_type=api"}, "rewards.math_rule.judge_model_type"},
        BadCase{"batch_zero", {"actor_train.training_args.per_device_train_batch_size=0"},
                "per_device_train_batch_size"},
        BadCase{"lora", {"actor_train.model_args.lora_target=q_proj"}, "actor_train.model_args.lora_target"},
        BadCase{"group_n_zero", {"num_return_sequences_in_group=0"}, "num_return_sequences_in_group"},
        BadCase{"lr_scheduler", {"actor_train.training_args.lr_scheduler_type=polynomial"}, "lr_scheduler_type"},
        BadCase{"seq_not_above_prompt", {"response_length=null", "sequence_length=32"}, "sequence_length"},
        BadCase{"query_filter", {"rewards.math_rule.query_filter_config.type=magic"}, "query_filter_config.type"},
        BadCase{"pg_variant", {"actor_train.pg_variant=ppo3"}, "actor_train.pg_variant"},
        BadCase{"pg_worker_needs_variant", {"actor_train.worker_cls=roll.pipeline.rlvr.actor_pg_worker.ActorPGWorker"},
                "actor_train.pg_variant"},
        BadCase{"tag_two_domains", {"+rewards.code_sandbox.tag_included=[math]"}, "tag_included"},
        BadCase{"opd_without_student", {"is_pure_opd=true"}, "student_train"},
        BadCase{"transfer_backend", {"transfer_backend={backend_name: x}"}, "transfer_backend"},
        BadCase{"profilers", {"profiler_timeline=true", "profiler_memory=true"}, "profiler_memory"},
        BadCase{"gae_needs_critic_devices", {"adv_estimator=gae", "reward_pretrain=/m"}, "critic.device_mapping"},
        BadCase{"missing_interpolation", {"exp_name=${nope}"}, "exp_name"},
        BadCase{"world_size_negative", {"rewards.math_rule.world_size=-2"}, "rewards.math_rule.world_size"},
        BadCase{"npu_colocated", {"actor_infer.device_mapping=list(range(0,2))"}, "actor_infer.device_mapping", false,
                Platform::npu},
        BadCase{"npu_megatron", {"actor_train.strategy_args.strategy_name=megatron_train"},
                "actor_train.strategy_args.strategy_name", false, Platform::npu},
        BadCase{"npu_flash_attn", {"actor_train.model_args.attn_implementation=flash_attention_2"},
                "actor_train.model_args.attn_implementation", false, Platform::npu},
        BadCase{"ag_partition_sum", {"train_env_manager.num_groups_partition=[3]"},
                "train_env_manager.num_groups_partition", true},
        BadCase{"ag_partition_len", {"val_env_manager.num_groups_partition=[8]"},
                "val_env_manager.num_groups_partition", true},
        BadCase{"ag_unknown_tag", {"train_env_manager.tags=[Chess]"}, "train_env_manager.tags", true},
        // What a worker would refuse when it starts, refused by validate (docs/known-gaps.md).
        BadCase{"moe_model", {"pretrain=Qwen/Qwen3-30B-A3B-Base"}, "actor_train.model_args.model_name_or_path"},
        BadCase{"vl_model", {"pretrain=Qwen/Qwen2.5-VL-7B-Instruct"}, "qwen2_5_vl"},
        BadCase{"dynamic_batching_budget", {"actor_train.use_dynamic_batching_in_train=true"},
                "actor_train.max_tokens_per_microbatch_in_train"},
        BadCase{"dynamic_batching_round",
                {"use_kl_loss=true", "reference.use_dynamic_batching_in_infer=true",
                 "reference.max_tokens_per_microbatch_in_infer=64", "reference.sequence_length_round_in_infer=128"},
                "reference.max_tokens_per_microbatch_in_infer"},
        BadCase{"fp16_model", {"actor_infer.model_args.dtype=fp16"}, "actor_infer.model_args.dtype"},
        BadCase{"parquet_data", {"actor_train.data_args.file_name=[data/train.parquet]"}, "actor_train.data_args.file_name"},
        BadCase{"dataset_type", {"actor_train.data_args.dataset_type=arrow"}, "actor_train.data_args.dataset_type"},
        BadCase{"beam_search", {"actor_infer.generating_args.num_beams=4"}, "actor_infer.generating_args.num_beams"},
        BadCase{"ag_proxy", {"train_env_manager.llm_proxy.proxy_type=openai"}, "train_env_manager.llm_proxy.proxy_type",
                true},
        BadCase{"ag_agent_runner", {"+custom_envs.FrozenLake.agent_runner_cls=my.Runner"},
                "custom_envs.FrozenLake.agent_runner_cls", true},
        BadCase{"judge_model_type_cluster",
                {"rewards.math_rule.worker_cls=roll.pipeline.rlvr.rewards.llm_judge_reward_worker.LLMJudgeRewardWorker",
                 "rewards.math_rule.judge_model_type=cluster"},
                "rewards.math_rule.judge_model_type"},
        BadCase{"crossthinkqa_without_reward_type",
                {"rewards.math_rule.worker_cls=roll.pipeline.rlvr.rewards.crossthinkqa_rule_reward_worker."
                 "CrossThinkQARuleRewardWorker"},
                "rewards.math_rule.reward_type"},
        BadCase{"ag_unsupported_env", {"train_env_manager.tags=[WebShop]"}, "custom_envs.WebShop.env_type", true},
        BadCase{"ag_val_batch", {"val_batch_size=6"}, "val_batch_size", true},
        BadCase{"ag_rollout_batch", {"rollout_batch_size=18"}, "rollout_batch_size", true},
        BadCase{"ag_max_traj", {"train_env_manager.max_traj_per_env=1", "rollout_batch_size=32"},
                "train_env_manager.max_traj_per_env", true},
        BadCase{"ag_partial_gpu", {"actor_infer.device_mapping=list(range(0,4))"}, "partial_gpu_mode", true},
        BadCase{"ag_batch_adjust", {"batch_adjust_mode=shrink"}, "batch_adjust_mode", true},
        BadCase{"ag_reward_norm", {"reward_normalization={grouping: tags, method: zscore}"},
                "reward_normalization.method", true},
        BadCase{"ag_npu_colocated", {"actor_infer.device_mapping=list(range(0,2))", "partial_gpu_mode=false"},
                "actor_infer.device_mapping", true, Platform::npu}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

TEST(ConfigDerive, ErrorsFromTheFileNameFileAndLine) {
  Fixture f;
  f.dir.write("exp/bad.yaml", std::string(kRlvr) + "loss_agg_mode: mean\nppo_epochs: two\n");
  const int base_lines = static_cast<int>(std::count(kRlvr, kRlvr + std::strlen(kRlvr), '\n'));
  const std::string loss_line = "bad.yaml:" + std::to_string(base_lines + 1);
  const std::string epochs_line = "bad.yaml:" + std::to_string(base_lines + 2);
  try {
    load_in(f.dir, "exp", "bad");
    FAIL() << "expected errors";
  } catch (const ConfigErrors& e) {
    // Type errors are reported together, each with file and line.
    ASSERT_GE(e.errors().size(), 1u);
    std::string all = e.what();
    EXPECT_NE(all.find(epochs_line), std::string::npos) << all;
    EXPECT_NE(all.find("ppo_epochs"), std::string::npos) << all;
  }
  try {
    load_in(f.dir, "exp", "bad", {"ppo_epochs=1"});
    FAIL() << "expected errors";
  } catch (const ConfigErrors& e) {
    std::string all = e.what();
    EXPECT_NE(all.find(loss_line), std::string::npos) << all;
    EXPECT_NE(all.find("loss_agg_mode"), std::string::npos) << all;
  }
}

TEST(ConfigDerive, SeveralErrorsAreListedTogether) {
  Fixture f;
  try {
    f.rlvr({"adv_estimator=x", "loss_agg_mode=y", "kl_penalty=z"});
    FAIL();
  } catch (const ConfigErrors& e) {
    EXPECT_EQ(e.errors().size(), 3u) << e.what();
  }
}

// ROLL's DistillConfig: the keys select the pipeline, student_pretrain / teacher_pretrain fill the
// two models, sequence_length defaults to 2048 and max_grad_norm to 0; bad knobs name their key.
TEST(ConfigDerive, DistillConfigIsDetectedAndChecked) {
  TempConfigDir d;
  d.write("e/distill.yaml",
          "student_pretrain: s/model\nteacher_pretrain: t/model\nkd_objective: reverse_kl\nnum_gpus_per_node: 2\n"
          "student:\n  data_args: {file_name: [rows.jsonl]}\n  device_mapping: list(range(0,2))\n"
          "teacher:\n  device_mapping: list(range(0,2))\n");
  auto l = load_in(d, "e", "distill");
  const config::PipelineConfig& c = l.config;
  EXPECT_EQ(c.kind, config::PipelineKind::distill);
  EXPECT_EQ(c.student.model_args.model_name_or_path, std::optional<std::string>("s/model"));
  EXPECT_EQ(c.teacher.model_args.model_name_or_path, std::optional<std::string>("t/model"));
  EXPECT_EQ(c.sequence_length, std::optional<int64_t>(2048));
  EXPECT_EQ(c.max_grad_norm, 0.0);
  EXPECT_EQ(c.logits_topk, 64);
  const auto plan = config::make_placement_plan(c, l.platform);
  ASSERT_EQ(plan.clusters.size(), 2u);
  EXPECT_EQ(plan.clusters[0].name, "student");
  EXPECT_EQ(plan.clusters[1].name, "teacher");
  EXPECT_NE(error_of([&] { load_in(d, "e", "distill", {"kd_objective=kl"}); }).find("kd_objective"), std::string::npos);
  EXPECT_NE(error_of([&] { load_in(d, "e", "distill", {"distill_loss_weight=1.5"}); }).find("distill_loss_weight"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_in(d, "e", "distill", {"logits_topk=-1"}); }).find("logits_topk"), std::string::npos);
  EXPECT_NE(error_of([&] { load_in(d, "e", "distill", {"kd_temperature=0"}); }).find("kd_temperature"),
            std::string::npos);
}

// ROLL's DPOConfig.__post_init__: the keys select the pipeline, pretrain fills both models, the
// batch sizes count pairs (doubled into rows), and the workers' schedule runs max_steps.
TEST(ConfigDerive, DpoConfigIsDetectedAndItsBatchSizesCountPairs) {
  TempConfigDir d;
  const std::string base =
      "chosen_key: chosen\nrejected_key: rejected\nbeta: 0.2\nmax_steps: 7\nsequence_length: 64\n"
      "pretrain: some/model\nnum_gpus_per_node: 2\n"
      "actor_train:\n  training_args: {per_device_train_batch_size: 3, gradient_accumulation_steps: 2}\n"
      "  data_args: {file_name: [pairs.jsonl]}\n  device_mapping: list(range(0,2))\n  infer_batch_size: 4\n"
      "reference:\n  device_mapping: list(range(0,2))\n  infer_batch_size: 5\n";
  d.write("e/dpo.yaml", base);
  auto l = load_in(d, "e", "dpo");
  const config::PipelineConfig& c = l.config;
  EXPECT_EQ(c.kind, config::PipelineKind::dpo);
  EXPECT_EQ(c.actor_train.training_args.per_device_train_batch_size, 6);
  EXPECT_EQ(c.actor_train.infer_batch_size, 8);
  EXPECT_EQ(c.reference.infer_batch_size, 10);
  EXPECT_EQ(c.actor_train.training_args.max_steps, 7);
  EXPECT_EQ(c.reference.model_args.model_name_or_path, std::optional<std::string>("some/model"));
  EXPECT_DOUBLE_EQ(c.beta, 0.2);
  const auto plan = config::make_placement_plan(c, l.platform);
  ASSERT_EQ(plan.clusters.size(), 2u);
  EXPECT_EQ(plan.clusters[0].name, "actor_train");
  EXPECT_EQ(plan.clusters[1].name, "reference");
  // Bad knobs name their key.
  EXPECT_NE(error_of([&] { load_in(d, "e", "dpo", {"beta=0"}); }).find("beta"), std::string::npos);
  EXPECT_NE(error_of([&] { load_in(d, "e", "dpo", {"label_smoothing=2"}); }).find("label_smoothing"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_in(d, "e", "dpo", {"rejected_key=chosen"}); }).find("rejected_key"),
            std::string::npos);
  std::string no_length = base;
  no_length.erase(no_length.find("sequence_length: 64\n"), std::strlen("sequence_length: 64\n"));
  d.write("e/dpo_no_length.yaml", no_length);
  EXPECT_NE(error_of([&] { load_in(d, "e", "dpo_no_length"); }).find("sequence_length"), std::string::npos);
}

TEST(ConfigDerive, MaxModelLenBelowSequenceLengthWarns) {
  Fixture f;
  auto l = f.rlvr({"actor_infer.strategy_args.strategy_config.max_model_len=100"});
  EXPECT_TRUE(has_warning(l, "max_model_len (100)"));
  EXPECT_TRUE(has_warning(l, "sequence_length (128)"));
}

// docs/config.md "Parallel layouts": every device a data-parallel rank, ROLL's global batch kept.
TEST(ConfigDerive, ModelParallelLayoutsRunAsDataParallelWithRollsGlobalBatch) {
  Fixture f;
  // 2 devices, TP 2: ROLL has 1 DP rank × (2 × 2) = 4 samples per optimizer step; rollcpp 2 ranks × (2 × 1).
  auto tp = f.rlvr({"actor_train.strategy_args.strategy_name=megatron_train",
                    "actor_train.strategy_args.strategy_config={tensor_model_parallel_size: 2}"});
  EXPECT_EQ(tp.config.actor_train.world_size.value(), 2);
  EXPECT_EQ(tp.config.actor_train.training_args.gradient_accumulation_steps, 1);
  EXPECT_EQ(tp.config.actor_train.training_args.per_device_train_batch_size, 2);
  EXPECT_TRUE(has_warning(tp, "tensor_model_parallel_size = 2"));
  EXPECT_TRUE(has_warning(tp, "ZeRO-3"));
  // GA 2, fold 4 (TP 2 × CP 2 on 4 devices): GA 2 -> 1, then the per-device batch 2 -> 1.
  auto cp = f.rlvr({"actor_train.strategy_args.strategy_name=megatron_train",
                    "actor_train.strategy_args.strategy_config={tensor_model_parallel_size: 2, context_parallel_size: 2}",
                    "actor_train.device_mapping=list(range(0,4))"});
  EXPECT_EQ(cp.config.actor_train.world_size.value(), 4);
  EXPECT_EQ(cp.config.actor_train.training_args.gradient_accumulation_steps, 1);
  EXPECT_EQ(cp.config.actor_train.training_args.per_device_train_batch_size, 1);
  // Expert and virtual-pipeline sizes shard nothing rollcpp keeps per rank: warned, batch unchanged.
  auto ep = f.rlvr({"actor_train.strategy_args.strategy_name=megatron_train",
                    "actor_train.strategy_args.strategy_config={expert_model_parallel_size: 2}"});
  EXPECT_EQ(ep.config.actor_train.training_args.gradient_accumulation_steps, 2);
  EXPECT_TRUE(has_warning(ep, "expert_model_parallel_size = 2"));
  // Ulysses folds like TP.
  auto ul = f.rlvr({"actor_train.model_args.ulysses_size=2"});
  EXPECT_EQ(ul.config.actor_train.training_args.gradient_accumulation_steps, 1);
  EXPECT_TRUE(has_warning(ul, "ulysses_size = 2"));
  // Inference TP: one engine replica per device.
  auto vtp = f.rlvr({"actor_infer.strategy_args.strategy_config.tensor_parallel_size=2",
                     "actor_infer.num_gpus_per_worker=2"});
  EXPECT_EQ(vtp.config.actor_infer.world_size.value(), 2);
  EXPECT_EQ(vtp.config.actor_infer.num_gpus_per_worker, 1);
  EXPECT_TRUE(has_warning(vtp, "actor_infer.strategy_args.strategy_config.tensor_parallel_size = 2"));
}

TEST(ConfigDerive, ModelArchitectureFromHubNameOrConfigJson) {
  using roll::config::model_type_from_hub_name;
  EXPECT_EQ(model_type_from_hub_name("Qwen/Qwen2.5-7B").value(), "qwen2");
  EXPECT_EQ(model_type_from_hub_name("virtuoussy/Qwen2.5-7B-Instruct-RLVR").value(), "qwen2");
  EXPECT_EQ(model_type_from_hub_name("Qwen/Qwen3-8B-Base").value(), "qwen3");
  EXPECT_EQ(model_type_from_hub_name("Qwen/Qwen3-4B-Instruct-2507").value(), "qwen3");
  EXPECT_EQ(model_type_from_hub_name("Qwen/Qwen3-30B-A3B").value(), "qwen3_moe");
  EXPECT_EQ(model_type_from_hub_name("Qwen/Qwen3-235B-A22B").value(), "qwen3_moe");
  EXPECT_EQ(model_type_from_hub_name("Qwen/Qwen3-VL-30B-A3B-Instruct").value(), "qwen3_vl_moe");
  EXPECT_EQ(model_type_from_hub_name("Qwen/Qwen3-Next-80B-A3B-Instruct").value(), "qwen3_next");
  EXPECT_EQ(model_type_from_hub_name("Qwen/Qwen3.5-2B").value(), "qwen3_5");
  EXPECT_EQ(model_type_from_hub_name("Qwen/Qwen3-Omni-30B-A3B-Thinking").value(), "qwen3_omni_moe");
  EXPECT_EQ(model_type_from_hub_name("meta-llama/Llama-3.2-1B-Instruct").value(), "llama");
  EXPECT_FALSE(model_type_from_hub_name("org/some-model").has_value());
  // A local directory answers with its config.json, whatever its name says.
  roll::testing::TempConfigDir d;
  d.write("Qwen3-30B-A3B/config.json", R"({"model_type": "qwen3"})");
  d.write("tiny/config.json", R"({"model_type": "qwen3_moe"})");
  EXPECT_EQ(roll::config::model_architecture(d.path() + "/Qwen3-30B-A3B")->model_type, "qwen3");
  Fixture f;
  EXPECT_NE(error_of([&] { f.rlvr({"pretrain=" + d.path() + "/tiny"}); }).find("qwen3_moe"), std::string::npos);
  EXPECT_TRUE(has_warning(f.rlvr(), "/nonexistent/model"));  // unknown: the worker checks it
}

TEST(ConfigDerive, NetworkTrackersWarn) {
  Fixture f;
  EXPECT_TRUE(has_warning(f.rlvr({"track_with=wandb"}), "wandb sync --sync-tensorboard"));
  EXPECT_NE(error_of([&] { f.rlvr({"track_with=ml_tracker"}); }).find("registry"), std::string::npos);
}

TEST(ConfigDerive, Bf16WithoutNativeInstructionsIsAWarningNamingKeyFeatureAndCost) {
  core::CpuFeatures zen3;
  zen3.model = "AMD EPYC 7763 64-Core Processor";
  zen3.avx2 = true;
  auto w = config::cpu_dtype_warning("bf16", zen3);
  ASSERT_TRUE(w.has_value());
  EXPECT_NE(w->find("AMD EPYC 7763"), std::string::npos) << *w;
  EXPECT_NE(w->find("avx512_bf16"), std::string::npos) << *w;
  EXPECT_NE(w->find("25-40x slower"), std::string::npos) << *w;
  EXPECT_NE(w->find("fp32"), std::string::npos) << *w;
  EXPECT_FALSE(config::cpu_dtype_warning("fp32", zen3).has_value());

  core::CpuFeatures zen4 = zen3;
  zen4.avx512f = zen4.avx512_bf16 = true;
  EXPECT_FALSE(config::cpu_dtype_warning("bf16", zen4).has_value());
  core::CpuFeatures amx = zen3;
  amx.amx_bf16 = true;
  EXPECT_FALSE(config::cpu_dtype_warning("bf16", amx).has_value());
}

TEST(ConfigDerive, Bf16WarningFollowsThisCpuAndOnlyWhereTheMathRunsOnIt) {
  Fixture f;
  const bool native = core::cpu_features().native_bf16();
  // dtype defaults to bf16 (ROLL's default).
  auto cpu = f.rlvr();
  EXPECT_EQ(has_warning(cpu, "key 'actor_train.model_args.dtype': bf16 on this CPU"), !native);
  EXPECT_EQ(has_warning(cpu, "key 'actor_infer.model_args.dtype': bf16 on this CPU"), !native);
  auto fp32 = f.rlvr({"actor_train.model_args.dtype=fp32", "actor_infer.model_args.dtype=fp32",
                      "reference.model_args.dtype=fp32"});
  EXPECT_FALSE(has_warning(fp32, "bf16 on this CPU"));
  // On the NPU the products run on the device, not on this CPU.
  EXPECT_FALSE(has_warning(f.rlvr({}, Platform::npu), "bf16 on this CPU"));
}

TEST(ConfigDerive, AutoDtypeIsBf16WhereItIsFastAndFp32Elsewhere) {
  core::CpuFeatures zen3;
  zen3.avx2 = true;
  core::CpuFeatures zen4 = zen3;
  zen4.avx512f = zen4.avx512_bf16 = true;
  core::CpuFeatures amx = zen3;
  amx.amx_bf16 = true;
  EXPECT_EQ(config::resolve_auto_dtype(true, zen3), "fp32");
  EXPECT_EQ(config::resolve_auto_dtype(true, zen4), "bf16");
  EXPECT_EQ(config::resolve_auto_dtype(true, amx), "bf16");
  EXPECT_EQ(config::resolve_auto_dtype(false, zen3), "bf16");  // the products run on the accelerator
  // Through the config: every role resolves for this CPU, and no bf16 warning follows from auto.
  Fixture f;
  const std::string expected = core::cpu_features().native_bf16() ? "bf16" : "fp32";
  auto c = f.rlvr({"actor_train.model_args.dtype=auto", "actor_infer.model_args.dtype=auto",
                   "reference.model_args.dtype=auto"});
  EXPECT_EQ(c.config.actor_train.model_args.dtype, expected);
  EXPECT_EQ(c.config.actor_infer.model_args.dtype, expected);
  EXPECT_EQ(c.config.actor_train.training_args.bf16, expected == "bf16");
  EXPECT_FALSE(has_warning(c, "bf16 on this CPU"));
  EXPECT_EQ(f.rlvr({"actor_train.model_args.dtype=auto"}, Platform::npu).config.actor_train.model_args.dtype, "bf16");
}

TEST(ConfigDerive, AgenticOverlongRewardNeedsPerTurnSamples) {
  Fixture f;
  auto msg = error_of([&] {
    f.agentic({"overlong_reward.enable=true", "overlong_reward.buffer_len=8"});
  });
  EXPECT_NE(msg.find("overlong_reward.enable"), std::string::npos) << msg;
  EXPECT_NE(msg.find("StepEnvManager"), std::string::npos) << msg;
  auto ok = f.agentic({"overlong_reward.enable=true", "overlong_reward.buffer_len=8",
                       "+custom_env.FrozenLake.env_manager_cls=roll.pipeline.agentic.env_manager.step_env_manager.StepEnvManager"});
  EXPECT_TRUE(ok.config.overlong_reward.enable);
}

TEST(ConfigDerive, AgenticTemplateOtherThanNativeIsAWarningThatItIsUnused) {
  Fixture f;
  EXPECT_FALSE(has_warning(f.agentic(), "data_args.template"));
  auto l = f.agentic({"+actor_infer.data_args.template=chatml"});
  EXPECT_TRUE(has_warning(l, "key 'actor_infer.data_args.template': 'chatml' is not used by the agentic pipeline"));
  EXPECT_FALSE(has_warning(f.agentic({"+actor_infer.data_args.template=native"}), "data_args.template"));
  // The RLVR pipeline renders its prompts with it.
  EXPECT_FALSE(has_warning(f.rlvr({"+actor_infer.data_args.template=chatml"}), "is not used"));
}

TEST(ConfigDerive, LoraOnActorTrainAndActorInferMustAgree) {
  Fixture f;
  const std::string t = "+actor_train.model_args.lora_target=", i = "+actor_infer.model_args.lora_target=";
  // ROLL's own examples name all-linear on one side and the module list on the other.
  auto ok = f.rlvr({t + "all-linear", i + "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj",
                    "+actor_train.model_args.lora_rank=32", "+actor_infer.model_args.lora_rank=32"});
  EXPECT_EQ(*ok.config.actor_train.model_args.lora_target, "all-linear");
  auto one_side = error_of([&] { f.rlvr({t + "q_proj"}); });
  EXPECT_NE(one_side.find("actor_infer.model_args.lora_target"), std::string::npos) << one_side;
  EXPECT_NE(one_side.find("actor_train.model_args.lora_target is 'q_proj'"), std::string::npos) << one_side;
  auto modules = error_of([&] { f.rlvr({t + "q_proj,v_proj", i + "q_proj"}); });
  EXPECT_NE(modules.find("adapt different modules"), std::string::npos) << modules;
  auto rank = error_of([&] { f.rlvr({t + "q_proj", i + "q_proj", "+actor_train.model_args.lora_rank=16"}); });
  EXPECT_NE(rank.find("actor_infer.model_args.lora_rank"), std::string::npos) << rank;
  auto bad = error_of([&] { f.rlvr({t + "lm_head", i + "lm_head"}); });
  EXPECT_NE(bad.find("actor_train.model_args.lora_target"), std::string::npos) << bad;
  // additional_target: modules outside the layers train whole; the engine takes actor_train's.
  auto saved = f.rlvr({t + "q_proj", i + "q_proj", "+actor_train.model_args.additional_target=embed_tokens,lm_head"});
  EXPECT_EQ(*saved.config.actor_train.model_args.additional_target, "embed_tokens,lm_head");
  auto inside = error_of([&] { f.rlvr({t + "q_proj", i + "q_proj", "+actor_train.model_args.additional_target=o_proj"}); });
  EXPECT_NE(inside.find("actor_train.model_args.additional_target"), std::string::npos) << inside;
  EXPECT_NE(inside.find("lora_target"), std::string::npos) << inside;
  auto without = error_of([&] { f.rlvr({"+actor_train.model_args.additional_target=lm_head"}); });
  EXPECT_NE(without.find("set lora_target as well"), std::string::npos) << without;
  // The critic takes adapters too, its value head "score" trained whole; "lm_head" is not its.
  const std::vector<std::string> gae = {"adv_estimator=gae", "reward_pretrain=/critic/model",
                                        "critic.device_mapping=list(range(0,2))",
                                        "critic.strategy_args.strategy_name=fsdp2_train",
                                        "+critic.model_args.lora_target=all-linear"};
  auto critic = f.rlvr(gae);
  EXPECT_EQ(*critic.config.critic.model_args.lora_target, "all-linear");
  auto critic_head = gae;
  critic_head.push_back("+critic.model_args.additional_target=lm_head");
  auto no_head = error_of([&] { f.rlvr(critic_head); });
  EXPECT_NE(no_head.find("critic.model_args.additional_target"), std::string::npos) << no_head;
  auto differ = error_of([&] {
    f.rlvr({t + "q_proj", i + "q_proj", "+actor_train.model_args.additional_target=lm_head",
            "+actor_infer.model_args.additional_target=norm"});
  });
  EXPECT_NE(differ.find("actor_infer.model_args.additional_target"), std::string::npos) << differ;
}

TEST(ConfigDerive, LoraComputesTheReferenceOnActorTrainAndStartsNoReferenceCluster) {
  Fixture f;
  auto l = f.rlvr({"init_kl_coef=0.1", "+actor_train.model_args.lora_target=q_proj",
                   "+actor_infer.model_args.lora_target=q_proj"});
  EXPECT_TRUE(l.config.enable_reference);
  EXPECT_TRUE(reference_from_actor(l.config));
  EXPECT_TRUE(has_warning(l, "key 'reference': ignored under LoRA"));
  for (const auto& c : make_placement_plan(l.config, l.platform).clusters)
    if (c.name == "reference") EXPECT_FALSE(c.started) << "configured, not started";
  auto plain = f.rlvr({"init_kl_coef=0.1"});
  EXPECT_FALSE(reference_from_actor(plain.config));
}
