// `roll status [--address HOST:PORT] [--stacks [--worker NAME]]`: Ray's `ray status` for a `roll start`
// cluster (its nodes, their devices and running workers, resources used and free, the running
// jobs), then the pipeline runs of this machine, with or without a cluster (docs/dashboard.md):
// each run's step and per-worker table from its dashboard; --stacks prints every thread's stack of
// its workers instead.
#include <CLI/CLI.hpp>
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <ctime>
#include <iostream>
#include <optional>

#include "roll/cli/commands.h"
#include "roll/core/error.h"
#include "roll/monitor/run_record.h"
#include "roll/monitor/run_status.h"
#include "roll/runtime/cluster_job.h"

namespace roll::cli {
namespace {

// --address, else ROLL_ADDRESS, else the head or agent this machine runs; nullopt when none.
std::optional<runtime::HostPort> status_address(const std::string& flag) {
  if (!flag.empty()) return runtime::parse_host_port(flag, "--address");
  const comm::EnvLookup env = comm::process_env();
  if (auto a = env("ROLL_ADDRESS"); a && *a != "local") return runtime::parse_host_port(*a, "ROLL_ADDRESS");
  const std::string dir = runtime::cluster_dir(env);
  for (auto role : {runtime::DaemonRole::head, runtime::DaemonRole::agent})
    if (auto r = runtime::read_daemon_record(dir, role)) return runtime::parse_host_port(r->address, runtime::state_file(dir, role));
  return std::nullopt;
}

struct StatusFlags {
  std::string address, worker;
  bool stacks = false;
};

// The runs of this machine: their table, or with --stacks their workers' stacks. Returns how many
// runs were reported.
size_t report_runs(const StatusFlags& f, const std::string& dir) {
  size_t reported = 0;
  for (const auto& run : monitor::running_run_records(dir)) {
    ++reported;
    if (run.dashboard_url.empty()) {
      std::cout << fmt::format("Run {} ({} {}): running without a dashboard (--dashboard-port 0); output_dir {}\n",
                               run.pid, run.pipeline, run.exp_name, run.output_dir);
      continue;
    }
    if (f.stacks) {
      const std::string path = f.worker.empty() ? "/api/stacks" : "/api/stacks?worker=" + f.worker;
      std::cout << fmt::format("Run {} ({} {}): thread stacks\n", run.pid, run.pipeline, run.exp_name)
                << monitor::format_run_stacks(monitor::fetch_dashboard_json(run.dashboard_url, path, std::chrono::seconds(30)));
    } else {
      try {
        std::cout << monitor::format_run_status(
            run, monitor::fetch_dashboard_json(run.dashboard_url, "/api/state", std::chrono::seconds(5)));
      } catch (const std::exception& e) {
        // One run that does not answer (busy machine, a pid reused after a killed driver) leaves the others shown.
        std::cout << fmt::format("Run {} ({} {}): {}\n", run.pid, run.pipeline, run.exp_name, e.what());
      }
    }
  }
  return reported;
}

}  // namespace

void register_status(CLI::App& app) {
  auto flags = std::make_shared<StatusFlags>();
  auto* cmd = app.add_subcommand(
      "status", "Nodes, devices, workers and jobs of a `roll start` cluster, as `ray status`, and this machine's runs");
  cmd->add_option("--address", flags->address, "The head's HOST:PORT (default: ROLL_ADDRESS, else this machine's daemon)");
  auto* stacks = cmd->add_flag("--stacks", flags->stacks,
                               "Print every thread's stack of the workers of this machine's runs (from their dashboards)");
  cmd->add_option("--worker", flags->worker, "With --stacks: only this worker (its name as the table shows it)")
      ->needs(stacks);
  cmd->callback([flags] {
    try {
      const comm::EnvLookup env = comm::process_env();
      const std::string dir = runtime::cluster_dir(env);
      const auto address = status_address(flags->address);
      if (address && !flags->stacks) {
        const runtime::ClusterView view = runtime::read_cluster_view(*address, std::chrono::seconds(5));
        std::cout << runtime::format_cluster_status(view,
                                                    fmt::format("{:%Y-%m-%d %H:%M:%S}", fmt::localtime(std::time(nullptr))));
      }
      const size_t runs = report_runs(*flags, dir);
      if (runs == 0 && (!address || flags->stacks))
        throw Error(fmt::format("no roll cluster or run to report on: no --address, no ROLL_ADDRESS, no `roll start` "
                                "daemon and no running pipeline recorded in {} (ROLL_CLUSTER_DIR)",
                                dir));
      set_exit_code(0);
    } catch (const std::exception& e) {
      std::cerr << "error: " << e.what() << "\n";
      set_exit_code(1);
    }
  });
}

}  // namespace roll::cli
