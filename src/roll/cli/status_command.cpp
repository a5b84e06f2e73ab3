// `roll status [--address HOST:PORT]`: Ray's `ray status` for a `roll start` cluster: its nodes,
// their devices and running workers, resources used and free, the running jobs.
#include <CLI/CLI.hpp>
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <ctime>
#include <iostream>

#include "roll/cli/commands.h"
#include "roll/core/error.h"
#include "roll/runtime/cluster_job.h"

namespace roll::cli {
namespace {

// --address, else ROLL_ADDRESS, else the head or agent this machine runs.
runtime::HostPort status_address(const std::string& flag) {
  if (!flag.empty()) return runtime::parse_host_port(flag, "--address");
  const comm::EnvLookup env = comm::process_env();
  if (auto a = env("ROLL_ADDRESS"); a && *a != "local") return runtime::parse_host_port(*a, "ROLL_ADDRESS");
  const std::string dir = runtime::cluster_dir(env);
  for (auto role : {runtime::DaemonRole::head, runtime::DaemonRole::agent})
    if (auto r = runtime::read_daemon_record(dir, role)) return runtime::parse_host_port(r->address, runtime::state_file(dir, role));
  throw Error(fmt::format("no roll cluster to report on: no --address, no ROLL_ADDRESS, and no `roll start` daemon "
                          "recorded in {} (ROLL_CLUSTER_DIR)",
                          dir));
}

}  // namespace

void register_status(CLI::App& app) {
  auto address = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("status", "Nodes, devices, workers and jobs of a `roll start` cluster, as `ray status`");
  cmd->add_option("--address", *address, "The head's HOST:PORT (default: ROLL_ADDRESS, else this machine's daemon)");
  cmd->callback([address] {
    try {
      const runtime::ClusterView view = runtime::read_cluster_view(status_address(*address), std::chrono::seconds(5));
      std::cout << runtime::format_cluster_status(view, fmt::format("{:%Y-%m-%d %H:%M:%S}", fmt::localtime(std::time(nullptr))));
      set_exit_code(0);
    } catch (const std::exception& e) {
      std::cerr << "error: " << e.what() << "\n";
      set_exit_code(1);
    }
  });
}

}  // namespace roll::cli
