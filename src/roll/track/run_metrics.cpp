#include "roll/track/run_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "roll/core/error.h"
#include "roll/core/log.h"

namespace roll::track {
namespace fs = std::filesystem;

namespace {

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r") == std::string::npos; }

// Adds one parsed line's numbers to `series`; throws a message without the file:line prefix.
void add_record(const nlohmann::json& record, std::map<std::string, std::vector<MetricPoint>>& series) {
  if (!record.is_object()) throw Error("expected an object {\"step\": ..., \"metrics\": {...}}");
  auto step = record.find("step");
  if (step == record.end() || !step->is_number_integer()) throw Error("no integer \"step\"");
  auto metrics = record.find("metrics");
  if (metrics == record.end() || !metrics->is_object()) throw Error("no \"metrics\" object");
  const int64_t s = step->get<int64_t>();
  for (const auto& [name, v] : metrics->items()) {
    if (v.is_array() || v.is_object()) throw Error(fmt::format("metric '{}' is a {}, not a scalar", name, v.type_name()));
    if (!v.is_number() && !v.is_boolean()) continue;  // null (non-finite) and text: not charted
    series[name].push_back({s, v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>()});
  }
}

}  // namespace

RunMetrics parse_metrics_jsonl(std::istream& in, const std::string& name) {
  RunMetrics run;
  run.hparams = nlohmann::json::object();
  std::string line;
  int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    const bool unfinished = in.eof();  // getline hit the end before a newline
    if (blank(line)) continue;
    nlohmann::json record;
    try {
      record = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      if (unfinished) {
        log::warn("{}:{}: skipping the unfinished last line (the run may still be writing it)", name, number);
        ++run.skipped_truncated;
        break;
      }
      throw Error(fmt::format("{}:{}: not JSON: {}", name, number, e.what()));
    }
    try {
      add_record(record, run.series);
    } catch (const Error& e) {
      throw Error(fmt::format("{}:{}: {}", name, number, e.what()));
    }
    ++run.steps;
  }
  for (auto& [metric, points] : run.series) {
    // Stable: of two lines with one step, the later stays last and wins.
    std::stable_sort(points.begin(), points.end(), [](const MetricPoint& a, const MetricPoint& b) { return a.step < b.step; });
    std::vector<MetricPoint> unique;
    for (const MetricPoint& p : points) {
      if (!unique.empty() && unique.back().step == p.step) unique.back() = p;
      else unique.push_back(p);
    }
    points = std::move(unique);
  }
  return run;
}

RunMetrics read_run_metrics(const std::string& run_dir) {
  const fs::path metrics = fs::path(run_dir) / "metrics.jsonl";
  std::ifstream in(metrics);
  if (!in) throw Error(fmt::format("cannot read {}", metrics.string()));
  RunMetrics run = parse_metrics_jsonl(in, metrics.string());
  if (run.steps == 0) throw Error(fmt::format("{} holds no step yet", metrics.string()));
  run.dir = run_dir;
  const fs::path hparams = fs::path(run_dir) / "hparams.json";
  if (fs::exists(hparams)) {
    std::ifstream h(hparams);
    try {
      run.hparams = nlohmann::json::parse(h);
    } catch (const nlohmann::json::exception& e) {
      throw Error(fmt::format("{}: not JSON: {}", hparams.string(), e.what()));
    }
    if (!run.hparams.is_object()) throw Error(fmt::format("{}: expected a JSON object", hparams.string()));
  }
  return run;
}

std::vector<std::string> find_run_dirs(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw Error(fmt::format("{} is not a directory", root));
  if (fs::exists(fs::path(root) / "metrics.jsonl")) return {root};
  std::vector<std::string> runs;
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file() && it->path().filename() == "metrics.jsonl") runs.push_back(it->path().parent_path().string());
  if (ec) throw Error(fmt::format("cannot list {}: {}", root, ec.message()));
  if (runs.empty())
    throw Error(fmt::format("no metrics.jsonl under {}: `roll report` reads the jsonl tracker's files (track_with: jsonl)",
                            root));
  std::sort(runs.begin(), runs.end());
  return runs;
}

}  // namespace roll::track
