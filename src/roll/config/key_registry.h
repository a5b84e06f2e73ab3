#pragma once
// The registry of every key the typed config (config/*_config.h, *_args.h) accepts. Each key is either consumed, naming the
// source file that reads its value, or ignored, with the reason shown to the user: a config that
// sets an ignored key gets one warning from load_config, so no accepted key is silently without
// effect. A unit test fails on a schema key without an entry and on an entry no struct lists.
//
// Keys are "<Struct>.<key>" (e.g. "ModelArguments.lora_rank"), because one struct serves several
// places of a config (WorkerConfig is actor_train, critic, rewards.<domain>, ...).
#include <concepts>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "roll/config/node.h"
#include "roll/config/schema.h"

namespace roll::config {

enum class KeyUse { consumed, ignored };

struct KeyEntry {
  std::string_view key;     // "<Struct>.<key>"
  KeyUse use;
  std::string_view detail;  // consumed: the repository-relative file that reads it; ignored: the reason
  std::string_view member;  // the struct member when it is not named like the key, else empty
};

// Every entry, grouped per struct in schema order.
std::span<const KeyEntry> key_registry();

// The entry of `key` of struct `struct_name`, or nullptr.
const KeyEntry* find_key_entry(std::string_view struct_name, std::string_view key);

// A key the registry calls ignored that a config tree sets.
struct IgnoredKeySet {
  std::string path;    // dotted path in the config, e.g. "actor_infer.generating_args.logprobs"
  std::string where;   // "file:line" of the value, "" when unknown
  std::string reason;  // from the registry
};

// Every ignored key that `root` (a composed and resolved config) sets to a value other than null,
// in visiting order. Below an ignored nested key (e.g. env_monitor) nothing more is reported.
std::vector<IgnoredKeySet> ignored_keys_set(const NodePtr& root);
// The same for one worker's mapping written at `path` outside the typed tree (OPD's named teachers).
std::vector<IgnoredKeySet> ignored_worker_keys_set(const NodePtr& worker, const std::string& path);

// RewardConfig and EnvManagerConfig list WorkerConfig's keys as their own (`worker.visit(v)`); those
// keys are registered once, under WorkerConfig.
template <typename S>
concept EmbedsWorkerConfig = requires(S& s) {
  { s.worker } -> std::same_as<WorkerConfig&>;
};

// The struct part of registry keys.
template <typename S>
constexpr std::string_view config_struct_name() {
  if constexpr (std::is_same_v<S, ModelArguments>) return "ModelArguments";
  else if constexpr (std::is_same_v<S, TrainingArguments>) return "TrainingArguments";
  else if constexpr (std::is_same_v<S, DataArguments>) return "DataArguments";
  else if constexpr (std::is_same_v<S, GeneratingArguments>) return "GeneratingArguments";
  else if constexpr (std::is_same_v<S, StrategyArguments>) return "StrategyArguments";
  else if constexpr (std::is_same_v<S, SequencePackingArgs>) return "SequencePackingArgs";
  else if constexpr (std::is_same_v<S, WorkerConfig>) return "WorkerConfig";
  else if constexpr (std::is_same_v<S, QueryFilterConfig>) return "QueryFilterConfig";
  else if constexpr (std::is_same_v<S, LlmProxyConfig>) return "LlmProxyConfig";
  else if constexpr (std::is_same_v<S, RewardConfig>) return "RewardConfig";
  else if constexpr (std::is_same_v<S, EnvManagerConfig>) return "EnvManagerConfig";
  else if constexpr (std::is_same_v<S, IsWeightConfig>) return "IsWeightConfig";
  else if constexpr (std::is_same_v<S, TrainInferFilterConfig>) return "TrainInferFilterConfig";
  else if constexpr (std::is_same_v<S, TrainInferCorrection>) return "TrainInferCorrection";
  else if constexpr (std::is_same_v<S, OverlongRewardConfig>) return "OverlongRewardConfig";
  else if constexpr (std::is_same_v<S, RewardNormalizationConfig>) return "RewardNormalizationConfig";
  else if constexpr (std::is_same_v<S, EnvMonitorConfig>) return "EnvMonitorConfig";
  else if constexpr (std::is_same_v<S, PipelineConfig>) return "PipelineConfig";
  else static_assert(sizeof(S) == 0, "a schema struct without a registry name: add it here");
}

}  // namespace roll::config
