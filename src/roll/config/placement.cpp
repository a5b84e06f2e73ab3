#include "roll/config/placement.h"

#include <fmt/format.h>

#include <map>

#include "roll/config/device_mapping.h"
#include "roll/config/opd.h"

namespace roll::config {
namespace {

struct Builder {
  const PipelineConfig& c;
  const PlatformRules& rules;
  int devices_per_node;
  int num_nodes;

  std::vector<std::pair<std::string, std::string>> base_env(const std::string& cluster, const std::string& worker,
                                                            int rank, int world) const {
    std::vector<std::pair<std::string, std::string>> env = {
        {"WORLD_SIZE", std::to_string(world)}, {"RANK", std::to_string(rank)}, {"LOCAL_RANK", "0"},
        {"CLUSTER_NAME", cluster},             {"WORKER_NAME", worker},
        {"ROLL_LOG_DIR", fmt::format("{}/{}", c.logging_dir, c.exp_name.value_or("roll"))},
        {"roll_RPC_TIMEOUT", std::to_string(c.rpc_timeout)},
    };
    for (const auto& kv : rules.default_env) env.push_back(kv);
    return env;
  }

  static void set_env(std::vector<std::pair<std::string, std::string>>& env, const std::string& k,
                      const std::string& v) {
    for (auto& [key, val] : env)
      if (key == k) {
        val = v;
        return;
      }
    env.emplace_back(k, v);
  }

  ClusterPlacement cluster(const std::string& name, const WorkerConfig& w, bool started, std::string note) const {
    ClusterPlacement cp;
    cp.name = name;
    cp.started = started;
    cp.note = std::move(note);
    cp.strategy = w.strategy_args ? w.strategy_args->strategy_name : "cpu";
    const int world = static_cast<int>(w.world_size.value_or(1));
    if (w.device_mapping && !w.device_mapping->empty() && w.num_gpus_per_worker > 0) {
      const auto& ids = *w.device_mapping;
      const size_t per = ids.size() / static_cast<size_t>(world);
      for (int r = 0; r < world; ++r) {
        WorkerPlacement wp;
        wp.rank = r;
        wp.devices.assign(ids.begin() + r * per, ids.begin() + (r + 1) * per);
        wp.node = wp.devices.front() / devices_per_node;
        std::string gpus;
        for (int d : wp.devices) {
          // ROLL names a worker by the device ranks on its first node.
          if (d / devices_per_node == wp.node) gpus += std::to_string(d % devices_per_node);
          wp.local_devices.push_back(d % devices_per_node);
        }
        wp.name = fmt::format("{}-{}-G{}", name, r, gpus);
        wp.env = base_env(name, wp.name, r, world);
        if (!rules.visibility_var.empty()) {
          std::string vis;
          for (int d : wp.local_devices) vis += (vis.empty() ? "" : ",") + std::to_string(d);
          set_env(wp.env, rules.visibility_var, vis);
        }
        for (const auto& [k, v] : w.system_envs) set_env(wp.env, k, v);
        cp.workers.push_back(std::move(wp));
      }
    } else {
      cp.cpu_only = true;
      cp.strategy = "cpu";
      for (int r = 0; r < world; ++r) {
        WorkerPlacement wp;
        wp.rank = r;
        wp.node = r % num_nodes;  // CPU-only workers spread round-robin over the nodes (docs/config.md)
        wp.name = fmt::format("{}-{}", name, r);
        wp.env = base_env(name, wp.name, r, world);
        for (const auto& [k, v] : w.system_envs) set_env(wp.env, k, v);
        cp.workers.push_back(std::move(wp));
      }
    }
    return cp;
  }
};

}  // namespace

const ClusterPlacement* PlacementPlan::find(const std::string& cluster) const {
  for (const auto& c : clusters)
    if (c.name == cluster) return &c;
  return nullptr;
}

PlacementPlan make_placement_plan(const PipelineConfig& c, Platform platform) {
  PlacementPlan plan;
  plan.platform = platform;
  plan.devices_per_node = static_cast<int>(std::max<int64_t>(1, c.num_gpus_per_node));
  plan.num_nodes = static_cast<int>(std::max<int64_t>(1, c.num_nodes));
  Builder b{c, platform_rules(platform), plan.devices_per_node, plan.num_nodes};
  auto& out = plan.clusters;
  if (c.kind == PipelineKind::sft) {
    out.push_back(b.cluster("sft_train", c.sft_train, true, ""));
    return plan;
  }
  if (c.kind == PipelineKind::distill) {
    out.push_back(b.cluster("student", c.student, true, ""));
    out.push_back(b.cluster("teacher", c.teacher, true, ""));
    return plan;
  }
  if (c.kind == PipelineKind::dpo) {
    out.push_back(b.cluster("actor_train", c.actor_train, true, ""));
    out.push_back(b.cluster("reference", c.reference, true, ""));
    return plan;
  }
  out.push_back(b.cluster("actor_train", c.actor_train, true, ""));
  out.push_back(b.cluster("actor_infer", c.actor_infer, true, ""));
  if (!c.opd_teachers.empty()) {
    for (size_t i = 0; i < c.opd_teachers.size(); ++i)
      out.push_back(b.cluster(opd_teacher_cluster(c, i), c.opd_teachers[i].second, true, ""));
  } else if (reference_from_actor(c)) {
    if (c.reference.device_mapping)
      out.push_back(b.cluster("reference", c.reference, false,
                              "configured but not started: under LoRA actor_train computes the reference "
                              "log-probs with its adapters disabled"));
  } else if (c.enable_reference) {
    out.push_back(b.cluster("reference", c.reference, true, ""));
  } else if (c.reference.device_mapping) {
    out.push_back(b.cluster("reference", c.reference, false,
                            fmt::format("configured but not started: enable_reference is false (init_kl_coef {}, "
                                        "use_kl_loss {})",
                                        c.init_kl_coef, c.use_kl_loss ? "true" : "false")));
  }
  if (c.adv_estimator == "gae") {
    out.push_back(b.cluster("critic", c.critic, true, ""));
  } else if (c.critic.device_mapping) {
    out.push_back(b.cluster("critic", c.critic, false,
                            fmt::format("configured but not started: adv_estimator is {} (critic only with gae)",
                                        c.adv_estimator)));
  }
  if (c.kind == PipelineKind::rlvr) {
    for (const auto& [domain, r] : c.rewards) out.push_back(b.cluster("reward-" + domain, r.worker, true, ""));
    if (c.reward_model) out.push_back(b.cluster("reward_model", *c.reward_model, true, ""));
  } else {
    out.push_back(b.cluster("train_env", c.train_env_manager.worker, true, ""));
    out.push_back(b.cluster("val_env", c.val_env_manager.worker, true, ""));
    if (c.reward) out.push_back(b.cluster("reward", c.reward->worker, true, ""));
  }
  return plan;
}

std::string format_placement_plan(const PlacementPlan& plan, bool with_env) {
  const auto& rules = platform_rules(plan.platform);
  std::string s = fmt::format("placement: platform {}, {} node(s) x {} device(s), backend {}\n", rules.name,
                              plan.num_nodes, plan.devices_per_node, rules.backend);
  for (const auto& c : plan.clusters) {
    std::vector<int> all;
    for (const auto& w : c.workers) all.insert(all.end(), w.devices.begin(), w.devices.end());
    s += fmt::format("  {:<22} {:<16} workers {:<4} devices {:<14} {}\n", c.name, c.strategy, c.workers.size(),
                     c.cpu_only ? "cpu" : format_device_ids(all), c.started ? "" : "[not started] " + c.note);
    if (c.cpu_only) {
      // CPU-only clusters can have hundreds of ranks: one line per node.
      std::map<int, std::vector<int>> by_node;
      for (const auto& w : c.workers) by_node[w.node].push_back(w.rank);
      for (const auto& [node, ranks] : by_node)
        s += fmt::format("    ranks {:<22} node {:<2} cpu\n", format_device_ids(ranks), node);
      if (!with_env) continue;
    }
    for (const auto& w : c.workers) {
      if (c.cpu_only && !with_env) break;
      std::string vis;
      if (!rules.visibility_var.empty() && !w.local_devices.empty())
        vis = fmt::format("{}={}", rules.visibility_var, format_device_ids(w.local_devices));
      s += fmt::format("    {:<28} node {:<2} devices {:<10} {}\n", w.name, w.node,
                       w.devices.empty() ? "cpu" : format_device_ids(w.devices), vis);
      if (with_env)
        for (const auto& [k, v] : w.env) s += fmt::format("      {}={}\n", k, v);
    }
  }
  return s;
}

}  // namespace roll::config
