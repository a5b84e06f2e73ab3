#pragma once
// `train_env_manager` / `val_env_manager` and `env_monitor` of an agentic config (ROLL's
// EnvManagerConfig, docs/config.md).
#include <cstdint>
#include <string>
#include <vector>

#include "roll/config/llm_proxy_config.h"
#include "roll/config/worker_config.h"

namespace roll::config {

struct EnvManagerConfig {
  WorkerConfig worker;
  LlmProxyConfig llm_proxy;
  int64_t num_env_groups = 128;
  int64_t group_size = 1;
  int64_t group_size_redundancy = 0;
  std::vector<std::string> tags{"SimpleSokoban"};
  std::vector<int64_t> num_groups_partition{128};
  int64_t max_traj_per_env = -1;
  double format_penalty = 0.0;  // inert in ROLL (docs/compat.md)
  int64_t max_env_num_per_worker = 0;
  std::string group_filter_cls = "roll.pipeline.agentic.agentic_pipeline.GroupFilter";

  template <typename V>
  void visit(V& v) {
    worker.visit(v);
    v.nested("llm_proxy", llm_proxy);
    v("num_env_groups", num_env_groups);
    v("group_size", group_size);
    v("group_size_redundancy", group_size_redundancy);
    v("tags", tags);
    v("num_groups_partition", num_groups_partition);
    v("max_traj_per_env", max_traj_per_env);
    v("format_penalty", format_penalty);
    v("max_env_num_per_worker", max_env_num_per_worker);
    v("group_filter_cls", group_filter_cls);
  }
};

struct EnvMonitorConfig {
  bool enable = true;
  int64_t monitor_interval = 30;
  int64_t hung_timeout = 3600;

  template <typename V>
  void visit(V& v) {
    v("enable", enable);
    v("monitor_interval", monitor_interval);
    v("hung_timeout", hung_timeout);
  }
};

}  // namespace roll::config
