#include "roll/config/slot_usage.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "roll/config/opd.h"

namespace roll::config {
namespace {

using Slot = std::pair<int, int>;  // node, global device id

std::set<Slot> slots_of(const ClusterPlacement& c) {
  std::set<Slot> out;
  for (const auto& w : c.workers)
    for (int d : w.devices) out.insert({w.node, d});
  return out;
}

}  // namespace

std::vector<PhaseSlots> phase_slot_usage(const PipelineConfig& config, const PlacementPlan& plan) {
  if (config.kind == PipelineKind::sft || config.kind == PipelineKind::dpo || config.kind == PipelineKind::distill)
    return {};
  // Who works in each phase (docs/pipelines.md): the infer workers generate; the reference, the
  // actor (when it recomputes old log-probs) and the critic (values) run the log-prob forwards; the
  // actor and the critic train.
  const bool agentic = config.kind == PipelineKind::agentic;
  std::vector<std::pair<std::string, std::vector<std::string>>> phases = {
      {agentic ? "rollout" : "generate", {"actor_infer"}},
      {"log_probs", {"reference", "critic"}},
      {"train", {"actor_train", "critic"}},
  };
  if (config.enable_old_logprobs_recompute) phases[1].second.push_back("actor_train");
  for (size_t i = 0; i < config.opd_teachers.size(); ++i) phases[1].second.push_back(opd_teacher_cluster(config, i));

  std::map<Slot, std::vector<std::string>> holders;
  std::map<std::string, std::set<Slot>> by_cluster;
  for (const auto& c : plan.clusters) {
    if (!c.started || c.cpu_only) continue;
    by_cluster[c.name] = slots_of(c);
    for (const Slot& s : by_cluster[c.name]) holders[s].push_back(c.name);
  }
  if (holders.empty()) return {};

  std::vector<PhaseSlots> out;
  for (const auto& [phase, names] : phases) {
    PhaseSlots p;
    p.phase = phase;
    std::set<Slot> used;
    for (const std::string& n : names)
      if (auto it = by_cluster.find(n); it != by_cluster.end()) {
        p.clusters.push_back(n);
        used.insert(it->second.begin(), it->second.end());
      }
    if (p.clusters.empty()) continue;  // e.g. no reference and no recompute: no log-prob phase
    for (const auto& [slot, names_here] : holders)
      if (!used.count(slot))
        p.idle.push_back(fmt::format("node {} device {} (holds {})", slot.first, slot.second, fmt::join(names_here, ", ")));
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<std::string> idle_slot_advice(const PipelineConfig& config, const PlacementPlan& plan) {
  if (plan.platform != Platform::cpu) return {};
  std::vector<std::string> lines;
  for (const auto& p : phase_slot_usage(config, plan))
    if (!p.idle.empty())
      lines.push_back(fmt::format("during {} ({}), {} slot(s) wait: {}", p.phase, fmt::join(p.clusters, ", "),
                                  p.idle.size(), fmt::join(p.idle, "; ")));
  if (lines.empty()) return lines;
  // The colocated mapping: both actor roles on every slot the plan uses, one rank per slot.
  std::set<Slot> all;
  for (const auto& c : plan.clusters)
    if (c.started && !c.cpu_only) all.merge(slots_of(c));
  const int per_node = plan.devices_per_node;
  std::string mapping = plan.num_nodes == 1 && static_cast<int>(all.size()) == per_node
                            ? fmt::format("list(range(0,{}))", per_node)
                            : fmt::format("the same {} slots", all.size());
  lines.push_back(fmt::format(
      "colocating puts every slot to work in every phase: actor_train.device_mapping and actor_infer.device_mapping "
      "both {} (the roles take turns on each slot; weights are shared in memory, docs/runtime.md)",
      mapping));
  return lines;
}

}  // namespace roll::config
