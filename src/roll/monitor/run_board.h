#pragma once
// What a running pipeline shows its dashboard (docs/dashboard.md): the run's state, step i of N with
// an ETA, the last step's time per phase, every step's metrics and the checkpoints written. The
// driver's step loop writes it; the dashboard's HTTP threads read it.
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace roll::monitor {

enum class RunState { starting, running, finished, failed };

class RunBoard {
 public:
  RunBoard(std::string pipeline, std::string exp_name, int64_t max_steps);

  void set_running(int64_t start_step);
  void set_finished();
  void set_failed(const std::string& error);
  void step_started(int64_t step);
  // `phase_seconds`: the step's time by phase label (step_profile.h's add_step_times).
  void step_finished(int64_t step, const std::map<std::string, double>& metrics,
                     const std::map<std::string, double>& phase_seconds, double wall_s);
  void checkpoint_written(int64_t step, const std::string& path);
  // The env monitor's last report (agentic): [{"group_id", "env_id", "episode_id", "seconds"}].
  void set_hung_envs(nlohmann::json hung);

  // The "run" object of /api/state (docs/dashboard.md).
  nlohmann::json run_json() const;
  nlohmann::json checkpoints_json() const;
  // Metric rows from index `since` on: {"rows": [{"step", "metrics"}], "next"}.
  nlohmann::json metrics_since(size_t since) const;
  std::vector<std::string> metric_names() const;
  const std::string& exp_name() const { return exp_name_; }
  const std::string& pipeline() const { return pipeline_; }

 private:
  const std::string pipeline_, exp_name_;
  const int64_t max_steps_;
  const double started_unix_;
  mutable std::mutex mu_;
  RunState state_ = RunState::starting;
  std::string error_;
  int64_t start_step_ = 0, finished_steps_ = 0;
  int64_t current_step_ = -1;
  double step_started_ = 0;  // steady seconds
  std::vector<double> step_walls_;
  std::map<std::string, double> last_phases_;
  std::vector<nlohmann::json> rows_;
  std::set<std::string> names_;  // every metric name seen
  std::vector<nlohmann::json> checkpoints_;
  nlohmann::json hung_envs_ = nlohmann::json::array();
};

}  // namespace roll::monitor
