#pragma once
// The driver's side of a run on one node (docs/design.md section 3): hosts the store, starts clusters of
// worker processes from a PlacementPlan, and stops them all on shutdown, on Ctrl-C or SIGTERM, and
// when the driver dies (workers set PR_SET_PDEATHSIG). On the head of a multi-node job it uses
// the NodeSet's store, binds to this node's address, and starts the workers placed on node k > 0
// through node k's agent.
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "roll/config/load.h"
#include "roll/runtime/cluster.h"
#include "roll/runtime/hang_watchdog.h"

namespace roll::comm {
class Store;
}
namespace roll::runtime {
class NodeSet;
}

namespace roll::runtime {

struct RuntimeOptions {
  // The command that enters the worker host (run_worker_host), e.g. {"/path/roll", "worker"}.
  std::vector<std::string> worker_command;
  std::string log_dir = "./output/logs/roll";  // worker logs: <log_dir>/log_rank_<name>_<rank>_<world>.log
  std::string run_dir;                          // scratch space; default: a fresh folder under /tmp
  std::optional<config::LoadRequest> config_request;  // published so workers load the same config
  std::optional<config::Platform> platform;   // which visibility variables to clear from inherited env
  std::chrono::milliseconds start_timeout{std::chrono::seconds(300)};
  std::chrono::milliseconds rpc_timeout{std::chrono::seconds(3600)};
  std::string host = "127.0.0.1";  // store and worker endpoints (multi-node: this node's address)
  std::shared_ptr<NodeSet> nodes;   // multi-node head: the joined nodes; null on one node
  std::map<std::string, std::string> extra_env;  // for every worker (after the placement's)
  int cores = 0;  // cores of this node for thread counts; 0: what the machine has
  bool forward_output = true;
  WatchdogOptions watchdog;  // calls running far past their usual time (hang_watchdog.h)
};

class Runtime {
 public:
  explicit Runtime(RuntimeOptions options);
  ~Runtime();  // shutdown()
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const RuntimeOptions& options() const { return options_; }
  const std::shared_ptr<comm::Store>& store() const { return store_; }

  // Starts every spec's workers at once, then waits until all serve (startup overlaps).
  std::vector<std::shared_ptr<Cluster>> start(std::vector<ClusterSpec> specs);
  std::shared_ptr<Cluster> start(ClusterSpec spec);

  // ATen threads for a worker (docs/design.md section 3): cores x its slots / slots per node, at least 1;
  // CPU-only workers get 1. `node_cores` > 0: the cores of the worker's (other) node.
  int threads_for(const config::WorkerPlacement& worker, int devices_per_node, int node_cores = 0) const;

  void shutdown();

  // The clusters running now (for the watchdog and the dashboard, from any thread).
  std::vector<std::shared_ptr<Cluster>> clusters() const;
  // Fails every pending and later call of every cluster with `reason`: a lost node or worker ends
  // the run at once, not when the driver next calls the cluster that lost it.
  void fail_all_calls(const std::string& reason);
  const HangWatchdog& watchdog() const { return *watchdog_; }

 private:
  friend class Cluster;
  RuntimeOptions options_;
  std::shared_ptr<comm::Store> store_;
  std::vector<std::weak_ptr<Cluster>> clusters_;
  mutable std::mutex mu_;
  std::unique_ptr<HangWatchdog> watchdog_;  // last member: stopped first
};

// Stops every worker process this process started (a signal handler's or atexit's last word).
void kill_all_workers();
// SIGINT/SIGTERM in the driver: stop the workers, then exit 130/143. Call once, early in main,
// before other threads start (it blocks those signals and waits for them on its own thread).
void install_driver_signal_handling();

}  // namespace roll::runtime
