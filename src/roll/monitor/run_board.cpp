#include "roll/monitor/run_board.h"

#include <chrono>
#include <numeric>

namespace roll::monitor {
namespace {

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }
double steady_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

const char* state_name(RunState s) {
  switch (s) {
    case RunState::starting: return "starting";
    case RunState::running: return "running";
    case RunState::finished: return "finished";
    case RunState::failed: return "failed";
  }
  return "?";
}

}  // namespace

RunBoard::RunBoard(std::string pipeline, std::string exp_name, int64_t max_steps)
    : pipeline_(std::move(pipeline)), exp_name_(std::move(exp_name)), max_steps_(max_steps), started_unix_(unix_now()) {}

void RunBoard::set_running(int64_t start_step) {
  std::lock_guard<std::mutex> g(mu_);
  state_ = RunState::running;
  start_step_ = finished_steps_ = start_step;
}

void RunBoard::set_finished() {
  std::lock_guard<std::mutex> g(mu_);
  state_ = RunState::finished;
  current_step_ = -1;
}

void RunBoard::set_failed(const std::string& error) {
  std::lock_guard<std::mutex> g(mu_);
  state_ = RunState::failed;
  error_ = error;
  current_step_ = -1;
}

void RunBoard::step_started(int64_t step) {
  std::lock_guard<std::mutex> g(mu_);
  current_step_ = step;
  step_started_ = steady_now();
}

void RunBoard::step_finished(int64_t step, const std::map<std::string, double>& metrics,
                             const std::map<std::string, double>& phase_seconds, double wall_s) {
  std::lock_guard<std::mutex> g(mu_);
  finished_steps_ = step + 1;
  current_step_ = -1;
  step_walls_.push_back(wall_s);
  last_phases_ = phase_seconds;
  nlohmann::json m = nlohmann::json::object();
  for (const auto& [k, v] : metrics) {
    m[k] = v;
    names_.insert(k);
  }
  rows_.push_back({{"step", step}, {"metrics", std::move(m)}});
}

void RunBoard::checkpoint_written(int64_t step, const std::string& path) {
  std::lock_guard<std::mutex> g(mu_);
  checkpoints_.push_back({{"step", step}, {"path", path}, {"unix", unix_now()}});
}

nlohmann::json RunBoard::run_json() const {
  std::lock_guard<std::mutex> g(mu_);
  nlohmann::json j{{"pipeline", pipeline_},        {"exp_name", exp_name_},       {"started_unix", started_unix_},
                   {"state", state_name(state_)},  {"error", error_},             {"step", finished_steps_},
                   {"start_step", start_step_},    {"max_steps", max_steps_},     {"current_step", nullptr},
                   {"step_running_s", nullptr},    {"eta_s", nullptr},            {"last_step_wall_s", nullptr},
                   {"last_step_times", last_phases_}, {"hung_envs", hung_envs_}, {"now_unix", unix_now()}};
  double running = 0;
  if (current_step_ >= 0) {
    running = steady_now() - step_started_;
    j["current_step"] = current_step_;
    j["step_running_s"] = running;
  }
  if (!step_walls_.empty()) {
    j["last_step_wall_s"] = step_walls_.back();
    if (state_ == RunState::running) {
      // The mean step so far times the steps left, less what the current step has already run.
      const double mean = std::accumulate(step_walls_.begin(), step_walls_.end(), 0.0) / static_cast<double>(step_walls_.size());
      j["eta_s"] = std::max(0.0, mean * static_cast<double>(max_steps_ - finished_steps_) - running);
    }
  }
  return j;
}

void RunBoard::set_hung_envs(nlohmann::json hung) {
  std::lock_guard<std::mutex> g(mu_);
  hung_envs_ = std::move(hung);
}

nlohmann::json RunBoard::checkpoints_json() const {
  std::lock_guard<std::mutex> g(mu_);
  return checkpoints_;
}

nlohmann::json RunBoard::metrics_since(size_t since) const {
  std::lock_guard<std::mutex> g(mu_);
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = since; i < rows_.size(); ++i) rows.push_back(rows_[i]);
  return {{"rows", std::move(rows)}, {"next", rows_.size()}};
}

std::vector<std::string> RunBoard::metric_names() const {
  std::lock_guard<std::mutex> g(mu_);
  return {names_.begin(), names_.end()};
}

}  // namespace roll::monitor
