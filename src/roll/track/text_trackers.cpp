#include "roll/track/text_trackers.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "roll/core/error.h"
#include "roll/core/log.h"

namespace roll::track {
namespace {

// json.dumps(value) with Python's defaults.
void python_dumps(const nlohmann::json& v, std::string& out) {
  if (v.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [k, x] : v.items()) {
      if (!first) out += ", ";
      first = false;
      out += nlohmann::json(k).dump(-1, ' ', /*ensure_ascii=*/true);
      out += ": ";
      python_dumps(x, out);
    }
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += ", ";
      python_dumps(v[i], out);
    }
    out += ']';
  } else if (v.is_number_float() && !std::isfinite(v.get<double>())) {
    const double d = v.get<double>();
    out += std::isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity";
  } else {
    out += v.dump(-1, ' ', /*ensure_ascii=*/true);
  }
}

}  // namespace

std::string python_json_line(int64_t step, const nlohmann::json& metrics) {
  std::string out = "{\"step\": " + std::to_string(step) + ", \"metrics\": ";
  python_dumps(metrics, out);
  return out + "}";
}

StdoutTracker::StdoutTracker() : sink_([](std::string_view line) { log::info("{}", line); }) {}

void StdoutTracker::write_metrics(int64_t step, const nlohmann::json& metrics) {
  sink_("metrics_tag: " + python_json_line(step, metrics));
}

JsonlTracker::JsonlTracker(const std::string& log_dir) : dir_(log_dir), path_(log_dir + "/metrics.jsonl") {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw Error("jsonl tracker: cannot create log directory " + dir_ + ": " + ec.message());
  // Append: a resumed run that reuses the directory keeps the earlier steps.
  file_ = std::fopen(path_.c_str(), "a");
  if (!file_) throw Error("jsonl tracker: cannot open " + path_ + ": " + std::strerror(errno));
}

JsonlTracker::~JsonlTracker() {
  try {
    finish();
  } catch (const std::exception& e) {
    log::error("{}", e.what());
  }
}

void JsonlTracker::write_line(const std::string& line) {
  std::lock_guard lock(mu_);
  if (!file_) throw Error("jsonl tracker: " + path_ + " is already finished");
  // fflush per line: a crash loses no finished step.
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
    throw Error("jsonl tracker: cannot write " + path_ + ": " + std::strerror(errno));
}

void JsonlTracker::write_metrics(int64_t step, const nlohmann::json& metrics) {
  write_line("{\"step\":" + std::to_string(step) + ",\"metrics\":" + metrics.dump() + "}\n");
}

void JsonlTracker::write_hparams(const nlohmann::json& flat_config) {
  const std::string path = dir_ + "/hparams.json";
  std::ofstream out(path, std::ios::trunc);
  out << flat_config.dump(2) << "\n";
  if (!out.flush()) throw Error("jsonl tracker: cannot write " + path);
}

void JsonlTracker::flush() {
  std::lock_guard lock(mu_);
  if (file_) std::fflush(file_);
}

void JsonlTracker::finish() {
  std::lock_guard lock(mu_);
  if (!file_) return;
  const bool ok = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok) throw Error("jsonl tracker: cannot close " + path_ + ": " + std::strerror(errno));
}

}  // namespace roll::track
