#pragma once
// A finished or running run as `roll report` reads it: the jsonl tracker's metrics.jsonl (one
// `{"step": s, "metrics": {...}}` per line) and hparams.json next to it (docs/tracking.md).
#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace roll::track {

struct MetricPoint {
  int64_t step;
  double value;
};

struct RunMetrics {
  std::string dir;                 // the run folder (holds metrics.jsonl)
  nlohmann::json hparams;          // hparams.json's flat object; empty object when the file is absent
  // Numeric series by metric name, sorted by step, one point per step (a repeated step: the later
  // line wins). Booleans count as 0/1; null (a non-finite number) and strings are not series.
  std::map<std::string, std::vector<MetricPoint>> series;
  int64_t steps = 0;               // lines read
  int64_t skipped_truncated = 0;   // an unfinished last line (the run is still writing): 0 or 1
};

// Parses metrics.jsonl text; `name` is the file named in errors. A malformed line is a roll::Error
// "<name>:<line>: ..." except an unfinished last line (no newline at the end), which is skipped
// and counted: a live run may be half-way through writing it.
RunMetrics parse_metrics_jsonl(std::istream& in, const std::string& name);

// Reads <run_dir>/metrics.jsonl and <run_dir>/hparams.json (optional); roll::Error naming the file.
RunMetrics read_run_metrics(const std::string& run_dir);

// The run folders under `root`: root itself when it holds metrics.jsonl, else every folder below
// it that does, sorted by path. roll::Error when there is none.
std::vector<std::string> find_run_dirs(const std::string& root);

}  // namespace roll::track
