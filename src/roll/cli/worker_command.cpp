// `roll worker`: the worker host the driver starts for each rank (docs/design.md section 3). Not for
// people: everything it needs arrives in its environment (runtime/worker_launch.h).
#include <CLI/CLI.hpp>

#include "roll/cli/commands.h"
#include "roll/runtime/worker_host.h"

namespace roll::cli {

void register_worker(CLI::App& app) {
  auto* cmd = app.add_subcommand("worker", "(internal) serve one worker rank; started by the driver");
  cmd->group("");  // hidden from --help
  cmd->callback([] { set_exit_code(roll::runtime::run_worker_host()); });
}

}  // namespace roll::cli
