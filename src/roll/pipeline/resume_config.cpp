#include "roll/pipeline/resume_config.h"

#include <fmt/format.h>

#include <algorithm>

#include "roll/core/error.h"

namespace roll::pipeline {
namespace {

constexpr const char* kAbsent = "<absent>";

void collect(const nlohmann::json* before, const nlohmann::json* after, const std::string& prefix,
             std::vector<ConfigChange>& out) {
  const bool both_objects = before && after && before->is_object() && after->is_object();
  if (!both_objects) {
    if (before && after && *before == *after) return;
    out.push_back({prefix, before ? before->dump() : kAbsent, after ? after->dump() : kAbsent});
    return;
  }
  // Keys in sorted order, from both sides.
  std::vector<std::string> keys;
  for (auto it = before->begin(); it != before->end(); ++it) keys.push_back(it.key());
  for (auto it = after->begin(); it != after->end(); ++it)
    if (!before->contains(it.key())) keys.push_back(it.key());
  std::sort(keys.begin(), keys.end());
  for (const auto& k : keys) {
    const auto b = before->find(k);
    const auto a = after->find(k);
    collect(b == before->end() ? nullptr : &*b, a == after->end() ? nullptr : &*a, prefix.empty() ? k : prefix + "." + k,
            out);
  }
}

bool changeable(const std::string& key) {
  for (const auto& allowed : resume_changeable_keys())
    if (key == allowed || key.rfind(allowed + ".", 0) == 0) return true;
  return false;
}

}  // namespace

const std::vector<std::string>& resume_changeable_keys() {
  static const std::vector<std::string> keys = {
      // how long the run goes on, and when it saves and logs
      "max_steps", "save_steps", "max_ckpt_to_keep", "logging_steps", "eval_steps", "resume_from_checkpoint",
      // where it writes and what it reports
      "output_dir", "logging_dir", "base_dir", "checkpoint_config", "rollout_dump_dir", "render_save_dir",
      "track_with", "tracker_kwargs", "save_logging_board_dir", "report_length_and_rewards", "profiler_timeline",
      "profiler_memory", "profiler_output_dir", "length_profiler_dir", "otlp_output_dir", "hydra",
      // evaluation (validation rollouts never train)
      "validation", "val_batch_size", "val_prompt_length", "val_sequence_length", "val_greedy", "val_n_sample",
      "val_env_manager",
      // the process environment and call timeouts
      "system_envs", "rpc_timeout"};
  return keys;
}

std::vector<ConfigChange> config_changes(const nlohmann::json& before, const nlohmann::json& after) {
  std::vector<ConfigChange> out;
  collect(&before, &after, "", out);
  return out;
}

std::vector<ConfigChange> check_resume_config(const std::string& checkpoint_dir, const nlohmann::json& saved,
                                              const nlohmann::json& current) {
  if (saved.is_null()) return {};
  std::vector<ConfigChange> allowed, refused;
  for (auto& c : config_changes(saved, current)) (changeable(c.key) ? allowed : refused).push_back(std::move(c));
  if (refused.empty()) return allowed;
  std::string list;
  for (const auto& c : refused) list += fmt::format("\n  {}: {} -> {}", c.key, c.before, c.after);
  throw ConfigError(refused.front().key,
                    fmt::format("resume_from_checkpoint: {} was written with another config; the resumed steps would "
                                "compute something that run did not. Changed:{}\nSet these as the checkpoint's run had "
                                "them, or start a new run (pretrain: the checkpoint's model). Keys a resume may change: "
                                "docs/compat.md, \"Resume\"",
                                checkpoint_dir, list));
}

}  // namespace roll::pipeline
