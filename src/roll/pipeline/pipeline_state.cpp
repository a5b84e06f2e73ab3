#include "roll/pipeline/pipeline_state.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "roll/core/error.h"
#include "roll/core/log.h"

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
}  // namespace

std::string pipeline_checkpoint_dir(const std::string& output_dir, int64_t step) {
  return output_dir + "/pipeline/checkpoint-" + std::to_string(step);
}

void save_pipeline_state(const std::string& checkpoint_dir, const PipelineState& state) {
  const fs::path file = fs::path(checkpoint_dir) / kStateFile;
  fs::create_directories(file.parent_path());
  const fs::path tmp = file.string() + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp);
    out << nlohmann::json{{"step", state.step},
                          {"exp_name", state.exp_name},
                          {"log_history", state.log_history},
                          {"kv", state.kv}}
               .dump(1);
    if (!out) throw Error("cannot write " + tmp.string());
  }
  fs::rename(tmp, file);
}

PipelineState load_pipeline_state(const std::string& checkpoint_dir) {
  const fs::path file = fs::path(checkpoint_dir) / kStateFile;
  std::ifstream in(file);
  if (!in) throw Error("resume: " + file.string() + " does not exist (not a complete pipeline checkpoint)");
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    PipelineState s;
    s.step = j.at("step").get<int64_t>();
    s.log_history = j.value("log_history", nlohmann::json::array());
    s.kv = j.value("kv", nlohmann::json::object());
    s.exp_name = j.value("exp_name", "");
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
  for (const auto& sub : fs::directory_iterator(output_dir)) {
    if (!sub.is_directory()) continue;
    std::map<int64_t, fs::path> found;
    for (const auto& e : fs::directory_iterator(sub.path()))
      if (auto n = checkpoint_number(e.path())) found[*n] = e.path();
    while (static_cast<int64_t>(found.size()) > keep) {
      fs::remove_all(found.begin()->second);
      found.erase(found.begin());
    }
  }
}

}  // namespace roll::pipeline
