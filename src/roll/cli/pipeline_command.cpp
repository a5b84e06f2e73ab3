// `roll rlvr`, `roll sft` (and the other pipelines as they land): the counterparts of ROLL's
// `python examples/start_{rlvr,sft}_pipeline.py --config_path P --config_name N`, with key=value
// overrides. Loads and validates the config, then runs the pipeline's driver, which starts the
// worker processes of the placement plan (docs/design.md section 3); with WORLD_SIZE > 1, on every node
// (the seed's Method A); on the nodes of a `roll start` cluster (Method B).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <stdlib.h>

#include <filesystem>
#include <iostream>
#include <optional>

#include "roll/cli/commands.h"
#include "roll/cli/config_options.h"
#include "roll/comm/store.h"
#include "roll/config/load.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/pipeline/agentic_pipeline.h"
#include "roll/pipeline/distill_pipeline.h"
#include "roll/pipeline/dpo_pipeline.h"
#include "roll/pipeline/rlvr_pipeline.h"
#include "roll/pipeline/sft_pipeline.h"
#include "roll/runtime/cluster_job.h"
#include "roll/runtime/node_agent.h"
#include "roll/runtime/node_identity.h"
#include "roll/runtime/node_join.h"
#include "roll/runtime/node_set.h"
#include "roll/runtime/runtime.h"

namespace roll::cli {
namespace {

struct PipelineCliOptions {
  ConfigOptions config;
  bool quiet_workers = false;
  bool eval_only = false;
  std::optional<int> dashboard_port;  // else DASHBOARD_PORT, else a `roll start` head's, else 8265
  double watchdog_min_s = 120;
  double watchdog_factor = 5;
  bool pure_opd = false;  // `roll opd`: ROLL's on-policy distillation launcher
};

// --dashboard-port, else DASHBOARD_PORT (the seed's variable), else `fallback`.
int dashboard_port(const PipelineCliOptions& o, int fallback) {
  if (o.dashboard_port) return *o.dashboard_port;
  if (auto p = comm::process_env()("DASHBOARD_PORT")) {
    try {
      const int v = std::stoi(*p);
      if (v >= 0 && v <= 65535) return v;
    } catch (const std::exception&) {
    }
    throw Error(fmt::format("DASHBOARD_PORT={} is not a port (0-65535; 0 turns the dashboard off)", *p));
  }
  return fallback;
}

int run_job(config::PipelineKind kind, config::LoadedConfig loaded, const config::LoadRequest& req,
            const pipeline::PipelineOptions& po) {
  switch (kind) {
    case config::PipelineKind::rlvr: return pipeline::RlvrPipeline(std::move(loaded), req, po).run();
    case config::PipelineKind::agentic: return pipeline::AgenticPipeline(std::move(loaded), req, po).run();
    case config::PipelineKind::sft: return pipeline::SftPipeline(std::move(loaded), req, po).run();
    case config::PipelineKind::dpo: return pipeline::DpoPipeline(std::move(loaded), req, po).run();
    case config::PipelineKind::distill: return pipeline::DistillPipeline(std::move(loaded), req, po).run();
    default: throw NotSupportedError(fmt::format("`roll {}`", config::pipeline_kind_name(kind)));
  }
}

// The head of a multi-node job: runs the driver over `nodes`, then tells every node how it ended.
int run_head(config::PipelineKind kind, config::LoadedConfig loaded, const config::LoadRequest& req,
             pipeline::PipelineOptions po, std::shared_ptr<runtime::NodeSet> nodes) {
  po.nodes = std::move(nodes);
  int rc = 1;
  try {
    rc = run_job(kind, std::move(loaded), req, po);
  } catch (const std::exception& e) {
    // A peer's socket closing usually fails a collective before the heartbeat says the node is
    // gone: name the node in the job's error when that is the cause.
    if (auto lost = po.nodes->lost_node_named_in(e.what())) {
      const std::string why = *lost + "; " + e.what();
      po.nodes->finish(false, why);
      throw Error(why);
    }
    po.nodes->finish(false, e.what());
    throw;
  }
  po.nodes->finish(rc == 0, rc == 0 ? "" : fmt::format("the driver exited with status {}", rc));
  return rc;
}

// The seed's Method A (docs/runtime.md): the same command on every node. The head (RANK 0) hosts the
// store, waits for the others and runs the driver; every other node joins and serves as the
// head's node agent until the head ends.
int run_multi_node(config::PipelineKind kind, config::LoadedConfig loaded, const config::LoadRequest& req,
                   pipeline::PipelineOptions po, const runtime::NodeIdentity& id) {
  const comm::EnvLookup env = comm::process_env();
  const auto heartbeat = runtime::heartbeat_timeout(env);
  const auto head_wait = runtime::head_wait_timeout(env);  // read on every node: a bad value fails everywhere
  const config::PlacementPlan plan = config::make_placement_plan(loaded.config, loaded.platform);
  if (plan.num_nodes > id.world_size)
    throw Error(fmt::format("the placement uses {} nodes (device ids / num_gpus_per_node) but {}={}: start one "
                            "`roll` per node",
                            plan.num_nodes, id.rank_source == "RANK" ? "WORLD_SIZE" : id.rank_source + "'s size",
                            id.world_size));
  const runtime::NodeInfo self =
      runtime::this_node(id, plan.devices_per_node, config::platform_rules(loaded.platform).device_key);
  if (!id.head()) {
    log::set_identity("NODE", id.rank, id.world_size);
    auto store = runtime::wait_for_head(id, head_wait, heartbeat);
    runtime::join_nodes(*store, self);
    runtime::NodeAgentOptions ao;
    ao.worker_command = {po.worker_executable, "worker"};
    ao.heartbeat_timeout = heartbeat;
    ao.forward_output = po.forward_worker_output;
    return runtime::run_node_agent(id, store, ao);
  }
  // The driver's own services (agentic routers and queues) bind where other nodes reach them.
  setenv("ROLL_BIND_HOST", self.address.c_str(), 1);
  return run_head(kind, std::move(loaded), req, std::move(po), runtime::NodeSet::start_head(id, self, heartbeat));
}

// The seed's Method B: `roll start` daemons are up and the pipeline runs on the head machine only.
// The job is a Method A job whose nodes are the cluster's live nodes; their agents stay up after it.
int run_on_cluster(config::PipelineKind kind, config::LoadedConfig loaded, const config::LoadRequest& req,
                   pipeline::PipelineOptions po, const runtime::HostPort& head) {
  const comm::EnvLookup env = comm::process_env();
  const auto heartbeat = runtime::heartbeat_timeout(env);
  const auto join_wait = runtime::head_wait_timeout(env);
  auto job = runtime::ClusterJob::open(head, heartbeat);
  const config::PlacementPlan plan = config::make_placement_plan(loaded.config, loaded.platform);
  job->check_fits(plan);
  const runtime::NodeIdentity& id = job->identity();
  const runtime::NodeInfo self = runtime::this_node(id, job->head().info.devices, job->head().info.device_key);
  setenv("ROLL_BIND_HOST", self.address.c_str(), 1);
  auto store = runtime::host_head_store(id);
  job->announce(fmt::format("{} {}", config::pipeline_kind_name(kind), loaded.config.exp_name.value_or("")), plan, store->port());
  const int rc = run_head(kind, std::move(loaded), req, std::move(po),
                          runtime::NodeSet::start_head(id, self, heartbeat, std::move(store), join_wait));
  job->end(rc == 0 ? "ok" : fmt::format("the driver exited with status {}", rc));
  return rc;
}

int run_pipeline(config::PipelineKind kind, const PipelineCliOptions& o) {
  config::LoadRequest req = o.config.load_request(kind);
  if (o.pure_opd) {  // the RLVR or agentic pipeline, as pure_opd_pipeline_type says
    req.kind.reset();
    req.pure_opd = true;
  }
  auto loaded = config::load_config(req);
  kind = loaded.config.kind;
  for (const auto& w : loaded.warnings) log::warn("{}", w.message);
  runtime::install_driver_signal_handling();
  pipeline::PipelineOptions po;
  po.worker_executable = std::filesystem::read_symlink("/proc/self/exe").string();
  po.forward_worker_output = !o.quiet_workers;
  po.eval_only = o.eval_only;
  po.pipeline_name = config::pipeline_kind_name(kind);
  po.dashboard_port = dashboard_port(o, 8265);
  if (o.watchdog_min_s < 0 || o.watchdog_factor < 1)
    throw Error(fmt::format("--watchdog-min-s {} / --watchdog-factor {}: the floor is >= 0 s (0: no watchdog) and "
                            "the factor >= 1",
                            o.watchdog_min_s, o.watchdog_factor));
  po.watchdog.min_bound = std::chrono::milliseconds(static_cast<int64_t>(o.watchdog_min_s * 1000));
  po.watchdog.factor = o.watchdog_factor;
  const runtime::NodeIdentity id = runtime::node_identity(comm::process_env());
  // ROLL_ADDRESS (as RAY_ADDRESS) names a cluster; else Method A's variables; else a `roll start`
  // head on this machine.
  const comm::EnvLookup env = comm::process_env();
  if (env("ROLL_ADDRESS") || !id.multi_node())
    if (auto head = runtime::cluster_address(env)) {
      // The head's `roll start --dashboard-port`: the job's driver runs on the head machine and serves there.
      po.dashboard_port = dashboard_port(o, runtime::read_cluster_view(*head, std::chrono::seconds(5)).dashboard_port);
      return run_on_cluster(kind, std::move(loaded), req, std::move(po), *head);
    }
  if (id.multi_node()) return run_multi_node(kind, std::move(loaded), req, std::move(po), id);
  return run_job(kind, std::move(loaded), req, po);
}

void add_pipeline_command(CLI::App& app, const char* name, config::PipelineKind kind, const char* help,
                          bool pure_opd = false) {
  auto opts = std::make_shared<PipelineCliOptions>();
  opts->pure_opd = pure_opd;
  auto* cmd = app.add_subcommand(name, help);
  add_config_options(*cmd, opts->config);
  cmd->add_flag("--quiet-workers", opts->quiet_workers, "Do not copy worker output to this terminal (it stays in the log files)");
  cmd->add_option("--dashboard-port", opts->dashboard_port,
                  "The run's live dashboard (default: DASHBOARD_PORT, else the `roll start` head's, else 8265; 0: none)");
  cmd->add_option("--watchdog-min-s", opts->watchdog_min_s,
                  "Hang watchdog: a call is reported (with its worker's stacks) once it runs past the factor times the "
                  "median of its method's earlier calls, and at least this long (0: no watchdog)")
      ->capture_default_str();
  cmd->add_option("--watchdog-factor", opts->watchdog_factor,
                  "Hang watchdog: how many times its method's median a call may run (first calls: times the floor)")
      ->capture_default_str();
  if (kind == config::PipelineKind::rlvr || kind == config::PipelineKind::agentic)
    cmd->add_flag("--eval-only", opts->eval_only,
                  "Validate the model at `pretrain` once (metrics val/* and eval/*) and stop; no training");
  cmd->callback([opts, kind] {
    try {
      set_exit_code(run_pipeline(kind, *opts));
    } catch (const config::ConfigErrors& e) {
      print_config_errors(e);
      set_exit_code(1);
    } catch (const std::exception& e) {
      std::cerr << "error: " << e.what() << "\n";
      runtime::kill_all_workers();
      set_exit_code(1);
    }
  });
}

}  // namespace

void register_pipelines(CLI::App& app) {
  add_pipeline_command(app, "rlvr", config::PipelineKind::rlvr,
                       "Run ROLL's RLVR pipeline (math/code rewards) as configured");
  add_pipeline_command(app, "agentic", config::PipelineKind::agentic,
                       "Run ROLL's agentic pipeline (multi-turn FrozenLake/Sokoban episodes) as configured");
  add_pipeline_command(app, "sft", config::PipelineKind::sft,
                       "Run ROLL's SFT pipeline (cross-entropy on the assistant tokens) as configured");
  add_pipeline_command(app, "dpo", config::PipelineKind::dpo,
                       "Run ROLL's DPO pipeline (preference pairs against a frozen reference) as configured");
  add_pipeline_command(app, "distill", config::PipelineKind::distill,
                       "Run ROLL's logit-distillation pipeline (a student trained on a teacher's top-k logits) as configured");
  add_pipeline_command(app, "opd", config::PipelineKind::rlvr,
                       "Run ROLL's on-policy distillation (student_train/student_infer/teacher: the student samples, "
                       "the teachers score each token) on the RLVR pipeline, or the agentic one by pure_opd_pipeline_type",
                       true);
}

}  // namespace roll::cli
