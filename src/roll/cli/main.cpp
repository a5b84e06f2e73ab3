// The `roll` command. Each subcommand lives in its own file and registers itself here.
#include <CLI/CLI.hpp>

#include <iostream>

#include "roll/cli/commands.h"
#include "roll/core/cpu_block_cache.h"
#include "roll/core/error.h"
#include "roll/workers/register_roles.h"

int main(int argc, char** argv) {
  try {
    // Every subcommand, workers included: training steps reuse their large blocks.
    roll::core::install_cpu_block_cache(roll::core::cpu_block_cache_limit_from_env());
  } catch (const roll::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  roll::workers::register_builtin_roles();
  CLI::App app{"rollcpp: ROLL's RL post-training pipelines as one native program"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "rollcpp 0.1.0");
  roll::cli::register_validate(app);
  roll::cli::register_defaults(app);
  roll::cli::register_model(app);
  roll::cli::register_lora(app);
  roll::cli::register_generate(app);
  roll::cli::register_worker(app);
  roll::cli::register_data(app);
  roll::cli::register_pipelines(app);
  roll::cli::register_report(app);
  roll::cli::register_start(app);
  roll::cli::register_status(app);
  roll::cli::register_stop(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return roll::cli::exit_code();
}
