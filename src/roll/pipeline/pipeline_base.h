#pragma once
// What every pipeline's driver does (docs/pipelines.md, docs/agentic.md): start the clusters of the placement
// plan as worker processes, keep train and infer weights in sync every model_update_frequency
// steps, run the step loop with validation every eval_steps, checkpoints every save_steps (and at
// the last step), resume from a checkpoint, and log metrics to the tracker every step.
// Subclasses implement the step.
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "roll/config/load.h"
#include "roll/config/placement.h"
#include "roll/core/batch.h"
#include "roll/pipeline/pipeline_state.h"
#include "roll/runtime/cluster.h"
#include "roll/runtime/runtime.h"

namespace roll::track {
class Tracker;
}
namespace roll::monitor {
class DashboardServer;
class RunBoard;
}

namespace roll::pipeline {

using Metrics = std::map<std::string, double>;

struct PipelineOptions {
  std::string worker_executable;  // `roll` (its `worker` subcommand hosts the roles)
  bool forward_worker_output = true;
  // Validation only (`--eval-only`): start the workers, validate the model at `pretrain` once,
  // log the val metrics and their eval/ names (eval_metric_names) as step 0, stop. No training.
  bool eval_only = false;
  std::shared_ptr<runtime::NodeSet> nodes;  // multi-node head: the joined nodes (null on one node)
  std::string pipeline_name;  // rlvr, agentic, sft: what the dashboard and `roll status` call the run
  int dashboard_port = 8265;  // the run's dashboard (docs/dashboard.md); 0: none
  runtime::WatchdogOptions watchdog;
};

// The headline eval/ names of validation metrics, for evaluation runs and the demo's table:
// val/env/<tag>/success -> eval/<tag>/success, val_correct/<tag>/mean -> eval/<tag>/accuracy,
// val/<tag>/score/mean -> eval/<tag>/score.
std::map<std::string, double> eval_metric_names(const std::map<std::string, double>& val_metrics);

// The runtime role each cluster of a plan runs (runtime role name).
std::string role_of_cluster(const std::string& cluster);

class PipelineBase {
 public:
  PipelineBase(config::LoadedConfig loaded, config::LoadRequest request, PipelineOptions options);
  virtual ~PipelineBase();

  // Runs the whole job; returns the process exit code.
  int run();

  const config::PipelineConfig& config() const { return loaded_.config; }
  // The config as the user wrote it (composed, not interpolated), as JSON: kept in each pipeline
  // checkpoint and compared on resume (resume_config.h). Null when the config was not loaded from YAML.
  nlohmann::json written_config() const;
  const std::vector<nlohmann::json>& history() const { return history_; }

 protected:
  // One training step's work after the model update; returns its metrics.
  virtual Metrics run_step(int64_t step) = 0;
  virtual Metrics validate(int64_t step) { return {}; }
  virtual bool has_validation() const { return false; }
  // Extra resumable state of the subclass (dataset positions), saved in WorkerState.kv.
  virtual nlohmann::json state_kv() const { return nlohmann::json::object(); }
  virtual void restore_kv(const nlohmann::json& kv) {}
  // Called once the clusters run, before the loop; and after the loop, before they stop.
  virtual void on_started() {}
  virtual void on_finished() {}
  // Runs before each step's model update (asynchronous generation pauses here); its metrics join the step's.
  virtual Metrics before_model_update(int64_t step) { return {}; }
  // What the dashboard shows of this run (set from run() on; shared with threads that report to it).
  std::shared_ptr<monitor::RunBoard> board_ptr() const { return board_; }
  // The clusters whose do_checkpoint / load_checkpoint the checkpoints and resume call (those
  // that are running); RL pipelines: actor_train and critic.
  virtual std::vector<std::string> checkpoint_clusters() const { return {"actor_train", "critic"}; }
  // What the step's progress line shows after the rate (the step's headline metrics).
  virtual std::string progress_postfix(const Metrics& step_metrics) const;
  // The runtime role a cluster of this pipeline runs (role_of_cluster unless a pipeline's workers
  // differ, as DPO's actor_train; on-policy distillation's teachers run the reference role).
  virtual std::string role_of(const std::string& cluster) const;

  runtime::Cluster& cluster(const std::string& name);
  runtime::Cluster* find_cluster(const std::string& name);
  std::chrono::milliseconds rpc_timeout() const;
  // Why the run cannot go on (a worker died, a node was lost), from any running cluster; nullopt
  // while all are well. For waits that no failed call wakes (rollouts fed by other workers).
  std::optional<std::string> cluster_failure() const;
  // At the end of a run: a worker that died after the run's last call to it failed nothing, but it
  // still died (a crash, an OOM kill), so the run reports it, naming the worker, instead of ending
  // as if all were well. Its work is done and the checkpoints are complete.
  void fail_if_a_worker_died() const;

  // ref_log_probs, old_log_probs (zeros unless enable_old_logprobs_recompute; ref := old without a
  // reference cluster) and values (with a critic) of `batch` [B, S], as both pipelines need them
  // (docs/pipelines.md steps 7-8, 6.3 step 5). Adds critic/entropy/mean when old log-probs are recomputed.
  Metrics compute_log_probs_and_values(Batch& batch);
  // critic.train_step (with a critic) and, from critic_warmup on, actor_train.train_step; their
  // reduced metrics. `batch` needs the advantages and masks of docs/workers.md.
  Metrics train(Batch& batch, int64_t step);

  // Pushes actor_train's weights to every actor_infer rank (docs/runtime.md): the broadcast group for
  // ranks elsewhere, the shared-memory file for ranks on train rank 0's node and devices.
  Metrics model_update(int64_t step);

  config::LoadedConfig loaded_;
  config::LoadRequest request_;
  PipelineOptions options_;
  config::PlacementPlan plan_;
  std::unique_ptr<runtime::Runtime> runtime_;
  std::map<std::string, std::shared_ptr<runtime::Cluster>> clusters_;
  std::unique_ptr<track::Tracker> tracker_;
  std::vector<nlohmann::json> history_;

 private:
  int run_steps();
  void start_dashboard();
  void stop_runtime();  // the dashboard lets go of the runtime first
  void start_clusters();
  std::string worker_log_dir() const;
  int run_eval_only();
  void setup_model_update();
  Metrics checkpoint(int64_t step);
  // Loads the clusters' state of the checkpoint `dir` (whose pipeline state is `state`).
  void resume(const std::string& dir, const PipelineState& state);

  int64_t start_step_ = 0;
  bool model_update_ready_ = false;
  std::vector<int> broadcast_ranks_, shm_ranks_;  // infer ranks per path
  std::vector<bool> shm_shares_;                  // per shm rank: computes from the mapping (colocated)
  std::string shm_dir_;                           // where train rank 0 writes the shared weights file
  std::shared_ptr<monitor::RunBoard> board_;
  std::unique_ptr<monitor::DashboardServer> dashboard_;
  std::string run_record_;  // `roll status`'s record of this run (removed at the end)
};

// Seconds since `t0`.
double seconds_since(std::chrono::steady_clock::time_point t0);

}  // namespace roll::pipeline
