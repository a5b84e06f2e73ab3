#pragma once
// Trackers (docs/tracking.md, ROLL's roll/utils/tracking.py): where a pipeline's per-step metrics go.
// `track_with` names one: tensorboard (event files), jsonl (our extension: one JSON line per
// step), stdout (log lines), "" (nothing). wandb, swanlab and trackio upload to a service, which
// rollcpp never does: they write event files and metrics.jsonl for the user to upload
// (config/tracker_names.h). See docs/tracking.md.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "roll/config/base_config.h"

namespace roll::track {

// ROLL's reducer tags ("actor/pg_loss@sum") name how a list was reduced; dashboards get the clean
// name. Only the last "@..." goes, as Python's key.rsplit("@", 1)[0].
std::string strip_reducer_tag(std::string_view key);

class Tracker {
 public:
  virtual ~Tracker() = default;
  // `metrics`: a flat object name -> number, bool, string or null. Keys lose their @tag first
  // (when two keys become one, the later in key order wins); nested values are a roll::Error.
  void log(int64_t step, const nlohmann::json& metrics);
  // `flat_config`: name -> scalar; lists/objects become their JSON text, null "None" (as str() in ROLL).
  void log_hparams(const nlohmann::json& flat_config);
  virtual void flush() {}
  virtual void finish() {}  // flushes and closes; further logging is an error

 protected:
  friend class MultiTracker;  // hands on what it got already cleaned (stripping twice is not a no-op)
  virtual void write_metrics(int64_t step, const nlohmann::json& metrics) = 0;
  virtual void write_hparams(const nlohmann::json& flat_config) = 0;
};

// Logs nothing (`track_with: ""`).
class NullTracker : public Tracker {
 protected:
  void write_metrics(int64_t, const nlohmann::json&) override {}
  void write_hparams(const nlohmann::json&) override {}
};

// Sends everything to each of several trackers (e.g. tensorboard plus jsonl for the dashboard).
class MultiTracker : public Tracker {
 public:
  explicit MultiTracker(std::vector<std::unique_ptr<Tracker>> trackers) : trackers_(std::move(trackers)) {}
  void flush() override;
  void finish() override;

 protected:
  void write_metrics(int64_t step, const nlohmann::json& metrics) override;
  void write_hparams(const nlohmann::json& flat_config) override;

 private:
  std::vector<std::unique_ptr<Tracker>> trackers_;
};

// docs/tracking.md: <tracker_kwargs.log_dir or output_dir>/<exp_name>/<YYYYMMDD-HHMMSS> (local time of `start`).
std::string tracker_log_dir(const config::BaseConfig& config, std::chrono::system_clock::time_point start);

// The tracker `name` writing under `log_dir` (unused by stdout and ""). ConfigError on key
// `track_with` for unknown names.
std::unique_ptr<Tracker> make_tracker(const std::string& name, const std::string& log_dir);

// The tracker `config.track_with` names, with the run's hparams already logged, as ROLL does when it
// creates a tracker: `written_config` is the whole resolved config as a tree
// (config::write_pipeline_config), logged flattened.
std::unique_ptr<Tracker> make_tracker(const config::BaseConfig& config, const config::NodePtr& written_config,
                                      std::chrono::system_clock::time_point start = std::chrono::system_clock::now());

}  // namespace roll::track
