#include "roll/pipeline/step_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "roll/runtime/cluster.h"

namespace roll::pipeline {

const std::vector<StepPhase>& step_phases() {
  // RLVR's, the agentic and the DPO pipeline's names for the same phase sit in one entry; SFT has
  // train only.
  static const std::vector<StepPhase> phases = {
      {"stop_server", {"time/step_stop_server"}},
      {"model_update", {"time/step_model_update"}},
      {"val", {"time/val_step", "time/step_val", "time/val"}},
      {"generate", {"time/step_generate"}},
      {"rollout", {"time/step_rollout"}},
      {"log_probs",
       {"time/ref_log_probs_values", "time/old_log_probs_values", "time/old_log_probs", "time/cal_ref_log_probs",
        "train/teacher_forward"}},
      {"advantage", {"time/compute_advantage"}},
      {"train", {"time/step_train", "time/actor_train", "train/student_train_step"}},
      {"checkpoint", {"time/step_checkpoint"}},
  };
  return phases;
}

std::map<std::string, double> add_step_times(std::map<std::string, double>& m, double wall_s) {
  double checkpoint_s = 0;
  for (const auto& [key, value] : m)
    if (key.size() > 5 && key.rfind("time/", 0) == 0 && key.find("/do_checkpoint/total") != std::string::npos)
      checkpoint_s = std::max(checkpoint_s, value);  // the clusters save concurrently: the slowest one
  m["time/step_checkpoint"] = checkpoint_s;
  std::map<std::string, double> by_phase;
  double in_phases = 0;
  for (const auto& phase : step_phases())
    for (const char* key : phase.metrics)
      if (auto it = m.find(key); it != m.end()) {
        by_phase[phase.label] = it->second;
        in_phases += it->second;
        break;
      }
  m["time/step_wall"] = wall_s;
  m["time/step_overhead"] = std::max(0.0, wall_s - in_phases);
  by_phase["overhead"] = m["time/step_overhead"];
  return by_phase;
}

std::string format_step_profile(const std::map<std::string, double>& m) {
  const auto wall = m.find("time/step_wall");
  if (wall == m.end()) return {};
  const double total = std::max(1e-9, wall->second);
  std::string text = fmt::format("{:.2f} s:", wall->second);
  auto part = [&](const std::string& label, double s, bool first) {
    text += fmt::format("{} {} {:.2f} ({:.0f}%)", first ? "" : ",", label, s, 100 * s / total);
  };
  bool first = true;
  for (const auto& phase : step_phases())
    for (const char* key : phase.metrics)
      if (auto it = m.find(key); it != m.end()) {
        if (it->second >= 0.005) part(phase.label, it->second, std::exchange(first, false));
        break;
      }
  if (auto it = m.find("time/step_overhead"); it != m.end()) part("overhead", it->second, first);
  std::string busy;
  const std::string prefix = "system/busy/";
  for (const auto& [key, value] : m)
    if (key.rfind(prefix, 0) == 0)
      busy += fmt::format("{} {} {:.0f}%", busy.empty() ? "; busy" : ",", key.substr(prefix.size()), 100 * value);
  return text + busy;
}

ClusterBusy::ClusterBusy(std::vector<runtime::Cluster*> clusters) : clusters_(std::move(clusters)) {}

std::vector<std::vector<double>> ClusterBusy::sample() {
  // Ask every worker at once, then collect: one round trip for the whole placement.
  std::vector<runtime::ClusterFuture> calls;
  for (auto* cluster : clusters_) calls.push_back(cluster->call(runtime::kBusyMethod, runtime::Dispatch::one_to_all));
  std::vector<std::vector<double>> out;
  peak_rss_mb_.assign(calls.size(), 0.0);
  for (size_t c = 0; c < calls.size(); ++c) {
    std::vector<double> ranks;
    for (const auto& reply : calls[c].get_all()) {
      ranks.push_back(reply.args.value("busy_s", 0.0));
      peak_rss_mb_[c] = std::max(peak_rss_mb_[c], reply.args.value("peak_rss_bytes", 0.0) / (1024.0 * 1024.0));
    }
    out.push_back(std::move(ranks));
  }
  return out;
}

void ClusterBusy::start() { at_start_ = sample(); }

void ClusterBusy::finish(std::map<std::string, double>& m, double wall_s) {
  if (at_start_.size() != clusters_.size() || wall_s <= 0) return;
  const auto now = sample();
  for (size_t c = 0; c < clusters_.size(); ++c) {
    double share = 0;
    const size_t ranks = std::min(now[c].size(), at_start_[c].size());
    for (size_t r = 0; r < ranks; ++r) share += std::clamp((now[c][r] - at_start_[c][r]) / wall_s, 0.0, 1.0);
    if (ranks > 0) m["system/busy/" + clusters_[c]->name()] = share / static_cast<double>(ranks);
    if (peak_rss_mb_[c] > 0) m["system/peak_rss_mb/" + clusters_[c]->name()] = peak_rss_mb_[c];
  }
}

}  // namespace roll::pipeline
