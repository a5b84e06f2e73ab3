// `roll rlvr`, `roll sft` (and the other pipelines as they land): the counterparts of ROLL's
// `python examples/start_{rlvr,sft}_pipeline.py --config_path P --config_name N`, with key=value
// overrides. Loads and validates the config, then runs the pipeline's driver, which starts the
// worker processes of the placement plan (DESIGN section 3).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "roll/cli/commands.h"
#include "roll/cli/config_options.h"
#include "roll/config/load.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/pipeline/agentic_pipeline.h"
#include "roll/pipeline/rlvr_pipeline.h"
#include "roll/pipeline/sft_pipeline.h"
#include "roll/runtime/runtime.h"

namespace roll::cli {
namespace {

struct PipelineCliOptions {
  ConfigOptions config;
  bool quiet_workers = false;
  bool eval_only = false;
};

int run_pipeline(config::PipelineKind kind, const PipelineCliOptions& o) {
  const config::LoadRequest req = o.config.load_request(kind);
  auto loaded = config::load_config(req);
  for (const auto& w : loaded.warnings) log::warn("{}", w.message);
  runtime::install_driver_signal_handling();
  pipeline::PipelineOptions po;
  po.worker_executable = std::filesystem::read_symlink("/proc/self/exe").string();
  po.forward_worker_output = !o.quiet_workers;
  po.eval_only = o.eval_only;
  switch (kind) {
    case config::PipelineKind::rlvr: return pipeline::RlvrPipeline(std::move(loaded), req, po).run();
    case config::PipelineKind::agentic: return pipeline::AgenticPipeline(std::move(loaded), req, po).run();
    case config::PipelineKind::sft: return pipeline::SftPipeline(std::move(loaded), req, po).run();
    default: throw NotSupportedError(fmt::format("`roll {}`", config::pipeline_kind_name(kind)));
  }
}

void add_pipeline_command(CLI::App& app, const char* name, config::PipelineKind kind, const char* help) {
  auto opts = std::make_shared<PipelineCliOptions>();
  auto* cmd = app.add_subcommand(name, help);
  add_config_options(*cmd, opts->config);
  cmd->add_flag("--quiet-workers", opts->quiet_workers, "Do not copy worker output to this terminal (it stays in the log files)");
  if (kind != config::PipelineKind::sft)
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
}

}  // namespace roll::cli
