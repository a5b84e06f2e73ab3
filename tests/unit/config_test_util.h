#pragma once
// Helpers for config tests: temporary config trees written from strings.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "roll/config/load.h"

namespace roll::testing {

// A small RLVR config with every role placed, for tests that load one (4 CPU slots).
inline constexpr const char* kRlvrConfig = R"(exp_name: t
num_gpus_per_node: 4
rollout_batch_size: 8
prompt_length: 64
response_length: 64
num_return_sequences_in_group: 2
adv_estimator: grpo
init_kl_coef: 0.0
pretrain: /nonexistent/model
system_envs: {A: '1', B: '2'}
actor_train:
  data_args:
    file_name: data/x.jsonl
    domain_interleave_probs: {math_rule: 1}
    messages: messages
  training_args: {per_device_train_batch_size: 2, gradient_accumulation_steps: 2}
  strategy_args: {strategy_name: deepspeed_train, strategy_config: {zero_optimization: {stage: 2}}}
  device_mapping: list(range(0,2))
  system_envs: {B: 'worker'}
actor_infer:
  strategy_args: {strategy_name: vllm, strategy_config: {max_model_len: 256}}
  generating_args: {max_new_tokens: 5, temperature: 0.7}
  device_mapping: list(range(2,4))
reference:
  strategy_args: {strategy_name: hf_infer}
  device_mapping: list(range(2,4))
rewards:
  math_rule:
    worker_cls: roll.pipeline.rlvr.rewards.math_rule_reward_worker.MathRuleRewardWorker
    tag_included: [math]
    world_size: 2
)";


class TempConfigDir {
 public:
  TempConfigDir() {
    char tmpl[] = "/tmp/roll_cfg_XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  ~TempConfigDir() { std::filesystem::remove_all(dir_); }
  TempConfigDir(const TempConfigDir&) = delete;
  TempConfigDir& operator=(const TempConfigDir&) = delete;

  // Writes `text` to `relative` (creating folders) and returns its path.
  std::string write(const std::string& relative, const std::string& text) const {
    std::filesystem::path p = std::filesystem::path(dir_) / relative;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  const std::string& path() const { return dir_; }

 private:
  std::string dir_;
};

inline config::LoadedConfig load_in(const TempConfigDir& dir, const std::string& sub, const std::string& name,
                                    std::vector<std::string> overrides = {},
                                    config::Platform platform = config::Platform::cpu,
                                    std::optional<int> devices_per_node = std::nullopt) {
  config::LoadRequest req;
  req.compose.config_path = (std::filesystem::path(dir.path()) / sub).string();
  req.compose.config_name = name;
  req.compose.overrides = std::move(overrides);
  req.platform = platform;
  req.devices_per_node = devices_per_node;
  return config::load_config(req);
}

// Runs `fn`, expects a roll::Error, returns its message ("" and a test failure otherwise).
template <typename F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected roll::Error, got std::exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected an error, got none";
  return "";
}

inline std::string source_dir() { return ROLL_SOURCE_DIR; }
inline std::string shared_examples_dir() { return source_dir() + "/../shared/roll-examples"; }

}  // namespace roll::testing
