#pragma once
// The PlacementPlan: pure data saying which worker of which cluster runs on which node and
// devices, with which environment (docs/runtime.md; docs/design.md section 3). The runtime executes it;
// `roll validate` prints it.
#include <string>
#include <utility>
#include <vector>

#include "roll/config/platform.h"
#include "roll/config/schema.h"

namespace roll::config {

struct WorkerPlacement {
  std::string name;              // ROLL's worker name, e.g. actor_infer-0-G01 or reward-math_rule-3
  int rank = 0;
  int node = 0;                  // node rank
  std::vector<int> devices;      // global device ids (empty for CPU-only workers)
  std::vector<int> local_devices;  // ids on its node (what the visibility variable lists)
  std::vector<std::pair<std::string, std::string>> env;  // complete, in the order applied
};

struct ClusterPlacement {
  std::string name;           // actor_train, actor_infer, reference, critic, reward-<domain>, train_env, ...
  bool started = true;        // false: configured but not started (why in `note`)
  std::string note;
  std::string strategy;       // strategy_name or "cpu"
  bool cpu_only = false;
  std::vector<WorkerPlacement> workers;
};

struct PlacementPlan {
  Platform platform = Platform::cpu;
  int num_nodes = 1;
  int devices_per_node = 1;
  std::vector<ClusterPlacement> clusters;

  const ClusterPlacement* find(const std::string& cluster) const;
};

PlacementPlan make_placement_plan(const PipelineConfig& config, Platform platform);

// Human-readable table for `roll validate`.
std::string format_placement_plan(const PlacementPlan& plan, bool with_env);

}  // namespace roll::config
