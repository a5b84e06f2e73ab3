#pragma once
// Trackers that write text: `stdout` (ROLL's StdoutTracker: one log line per step) and `jsonl`
// (our extension: <log_dir>/metrics.jsonl, one JSON object per step, flushed per step).
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "roll/track/tracker.h"

namespace roll::track {

// `{"step": s, "metrics": {...}}` as Python's json.dumps writes it (", " and ": " separators,
// non-ASCII escaped, NaN/Infinity for non-finite numbers): ROLL's log line (keys sorted).
std::string python_json_line(int64_t step, const nlohmann::json& metrics);

class StdoutTracker : public Tracker {
 public:
  using Sink = std::function<void(std::string_view line)>;
  StdoutTracker();  // lines go to roll::log::info
  explicit StdoutTracker(Sink sink) : sink_(std::move(sink)) {}

 protected:
  void write_metrics(int64_t step, const nlohmann::json& metrics) override;
  void write_hparams(const nlohmann::json&) override {}  // ROLL's stdout tracker logs no config

 private:
  Sink sink_;
};

class JsonlTracker : public Tracker {
 public:
  explicit JsonlTracker(const std::string& log_dir);  // creates the directory; roll::Error naming it
  ~JsonlTracker() override;
  const std::string& path() const { return path_; }
  void flush() override;
  void finish() override;

 protected:
  // One line `{"step":s,"metrics":{...}}` (strict JSON: non-finite numbers become null).
  void write_metrics(int64_t step, const nlohmann::json& metrics) override;
  // hparams go to <log_dir>/hparams.json, so every line of metrics.jsonl is a step.
  void write_hparams(const nlohmann::json& flat_config) override;

 private:
  void write_line(const std::string& line);
  std::string dir_, path_;
  std::mutex mu_;
  std::FILE* file_ = nullptr;
};

}  // namespace roll::track
