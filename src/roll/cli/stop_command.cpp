// `roll stop`: Ray's `ray stop`. Stops the `roll start` daemons of this machine (its head, which
// tells every node agent to exit, and its agent; their workers go with them) and removes their
// state files. Nothing running is not an error.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <signal.h>

#include <iostream>
#include <thread>

#include "roll/cli/commands.h"
#include "roll/core/error.h"
#include "roll/runtime/cluster_state.h"

namespace roll::cli {
namespace {

int run_stop(std::chrono::milliseconds grace) {
  const std::string dir = runtime::cluster_dir(comm::process_env());
  std::vector<runtime::DaemonRecord> running;
  for (auto role : {runtime::DaemonRole::head, runtime::DaemonRole::agent}) {
    auto r = runtime::read_daemon_record(dir, role);
    if (!r) continue;
    if (runtime::roll_process_alive(r->pid)) {
      running.push_back(*r);
      kill(r->pid, SIGTERM);
    } else {
      runtime::remove_daemon_record(dir, role);  // stale: its daemon died without cleaning up
    }
  }
  if (running.empty()) {
    std::cout << "Did not find any active roll processes.\n";
    return 0;
  }
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (const auto& r : running) {
    while (runtime::roll_process_alive(r.pid) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (runtime::roll_process_alive(r.pid)) {
      std::cerr << fmt::format("the roll {} (pid {}) did not stop within {:.0f} s: killing it\n",
                               runtime::daemon_role_name(r.role), r.pid, std::chrono::duration<double>(grace).count());
      kill(r.pid, SIGKILL);
    }
    runtime::remove_daemon_record(dir, r.role);
    std::cout << fmt::format("Stopped the roll {} (pid {}, cluster {}).\n", runtime::daemon_role_name(r.role), r.pid,
                             r.address);
  }
  std::cout << fmt::format("Stopped all {} roll process(es).\n", running.size());
  return 0;
}

}  // namespace

void register_stop(CLI::App& app) {
  auto grace = std::make_shared<double>(15);
  auto* cmd = app.add_subcommand("stop", "Stop this machine's `roll start` daemons and their workers, as `ray stop`");
  cmd->add_option("--grace-period", *grace, "Seconds to wait before killing a daemon that does not stop")
      ->capture_default_str();
  cmd->callback([grace] {
    try {
      set_exit_code(run_stop(std::chrono::milliseconds(static_cast<int64_t>(*grace * 1000))));
    } catch (const std::exception& e) {
      std::cerr << "error: " << e.what() << "\n";
      set_exit_code(1);
    }
  });
}

}  // namespace roll::cli
