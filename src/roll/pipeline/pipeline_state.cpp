#include "roll/pipeline/pipeline_state.h"

#include <fmt/format.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <filesystem>
#include <fstream>
#include <algorithm>
#include <vector>

#include "roll/core/error.h"
#include "roll/core/json_number.h"
#include "roll/core/log.h"
#include "roll/train/checkpoint.h"

namespace roll::pipeline {
namespace fs = std::filesystem;

namespace {
constexpr const char* kStateFile = "pipeline/worker_state_pipeline.json";

std::optional<int64_t> checkpoint_number(const fs::path& p) {
  const std::string name = p.filename().string();
  if (name.rfind("checkpoint-", 0) != 0) return std::nullopt;
  try {
    size_t used = 0;
    int64_t n = std::stoll(name.substr(11), &used);
    if (used != name.size() - 11) return std::nullopt;
    return n;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}
// fsync of a file or directory; best effort (a file system without it still has the rename's order).
void sync_path(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

std::string pipeline_checkpoint_dir(const std::string& output_dir, int64_t step) {
  return output_dir + "/pipeline/checkpoint-" + std::to_string(step);
}

void save_pipeline_state(const std::string& checkpoint_dir, const PipelineState& state) {
  // Written whole under <dir>.partial and renamed: a crash leaves no checkpoint-N without its state.
  const fs::path dir(checkpoint_dir);
  const fs::path partial = dir.string() + ".partial";
  fs::remove_all(partial);
  const fs::path file = partial / kStateFile;
  fs::create_directories(file.parent_path());
  nlohmann::json j{{"step", state.step}, {"exp_name", state.exp_name}, {"log_history", state.log_history},
                   {"kv", state.kv}};
  if (!state.config.is_null()) j["config"] = state.config;
  {
    std::ofstream out(file);
    out << j.dump(1);
    out.flush();
    if (!out) throw Error(fmt::format("cannot write {}: {}", file.string(), std::strerror(errno)));
  }
  sync_path(file);
  if (fs::exists(dir)) fs::remove_all(dir);  // the same step saved again by a resumed run
  fs::rename(partial, dir);
  sync_path(dir.parent_path());
}

PipelineState load_pipeline_state(const std::string& checkpoint_dir) {
  const fs::path file = fs::path(checkpoint_dir) / kStateFile;
  std::ifstream in(file);
  if (!in) throw Error("resume: " + file.string() + " does not exist (not a complete pipeline checkpoint)");
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    PipelineState s;
    s.step = json_integer<int64_t>(j.at("step"), "step");
    s.log_history = j.value("log_history", nlohmann::json::array());
    s.kv = j.value("kv", nlohmann::json::object());
    s.exp_name = j.value("exp_name", "");
    s.config = j.value("config", nlohmann::json());
    return s;
  } catch (const std::exception& e) {
    throw Error("resume: " + file.string() + " is malformed: " + e.what());
  }
}

std::optional<std::string> find_resume_checkpoint(const std::string& value, const std::string& output_dir) {
  if (value.empty() || value == "false" || value == "False" || value == "null") return std::nullopt;
  if (value == "true" || value == "True" || value == "latest") {
    std::optional<int64_t> best;
    const fs::path root = fs::path(output_dir) / "pipeline";
    if (fs::is_directory(root))
      for (const auto& e : fs::directory_iterator(root)) {
        auto n = checkpoint_number(e.path());
        if (n && fs::exists(e.path() / kStateFile) && (!best || *n > *best)) best = n;
      }
    if (!best) {
      log::warn("resume_from_checkpoint: {}: no complete checkpoint under {} yet; starting from step 0", value,
                root.string());
      return std::nullopt;
    }
    return pipeline_checkpoint_dir(output_dir, *best);
  }
  if (!fs::exists(fs::path(value) / kStateFile))
    throw Error("resume_from_checkpoint: " + value + " has no " + kStateFile + " (not a complete pipeline checkpoint)");
  return value;
}

void check_resume_exp_name(const std::string& checkpoint_dir, const PipelineState& state, const std::string& exp_name) {
  if (state.exp_name.empty() || state.exp_name == exp_name) return;
  throw ConfigError("exp_name", fmt::format("resume_from_checkpoint: {} was written by exp_name '{}', and this run's "
                                            "exp_name is '{}': resume it as exp_name '{}' (its tracker history "
                                            "continues there), or start '{}' without resume_from_checkpoint",
                                            checkpoint_dir, state.exp_name, exp_name, state.exp_name, exp_name));
}

void prune_checkpoints(const std::string& output_dir, int64_t keep) {
  if (keep <= 0 || !fs::is_directory(output_dir)) return;
  // The pipeline's state goes first: a crash midway leaves clusters' checkpoints without a
  // pipeline checkpoint (ignored by resume), never a pipeline checkpoint without its parts.
  std::vector<fs::path> subs;
  for (const auto& sub : fs::directory_iterator(output_dir))
    if (sub.is_directory()) subs.push_back(sub.path());
  std::stable_partition(subs.begin(), subs.end(), [](const fs::path& p) { return p.filename() == "pipeline"; });
  for (const auto& sub : subs) train::prune_checkpoints(sub.string(), keep);
}

}  // namespace roll::pipeline
