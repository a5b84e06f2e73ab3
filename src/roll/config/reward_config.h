#pragma once
// `rewards.<domain>` (RLVR) and `reward` (agentic): a reward worker's block with its query filter
// (ROLL's RewardConfig, docs/config.md).
#include <optional>
#include <string>

#include "roll/config/llm_proxy_config.h"
#include "roll/config/node.h"
#include "roll/config/worker_config.h"

namespace roll::config {

struct QueryFilterConfig {
  std::string type = "no_filter";  // no_filter | mean_filter | std_filter
  NodePtr filter_args;

  template <typename V>
  void visit(V& v) {
    v("type", type);
    v("filter_args", filter_args);
  }
};

struct RewardConfig {
  WorkerConfig worker;
  std::optional<std::string> code_url;
  bool use_local = true;
  std::optional<std::string> judge_prompt;
  std::optional<std::string> judge_model_type;  // api | inference
  std::optional<std::string> judge_model_name;
  std::optional<std::string> judge_api_url;
  std::optional<std::string> judge_api_key;
  std::optional<std::string> format_pattern;
  std::optional<std::string> reward_type;
  double response_length_penalty_coef = 0.0;
  QueryFilterConfig query_filter_config;
  NodePtr response_filter_config;
  NodePtr reward_manager_config;
  std::optional<LlmProxyConfig> llm_proxy;

  template <typename V>
  void visit(V& v) {
    worker.visit(v);
    v("code_url", code_url);
    v("use_local", use_local);
    v("judge_prompt", judge_prompt);
    v("judge_model_type", judge_model_type);
    v("judge_model_name", judge_model_name);
    v("judge_api_url", judge_api_url);
    v("judge_api_key", judge_api_key);
    v("format_pattern", format_pattern);
    v("reward_type", reward_type);
    v("response_length_penalty_coef", response_length_penalty_coef);
    v.nested("query_filter_config", query_filter_config);
    v("response_filter_config", response_filter_config);
    v("reward_manager_config", reward_manager_config);
    v.nested("llm_proxy", llm_proxy);
  }
};

}  // namespace roll::config
