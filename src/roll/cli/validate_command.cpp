// `roll validate`: compose, interpolate, type, derive and check a ROLL config; print the resolved
// config, the placement plan and the memory plan (memory/). Starts nothing; only warns about missing model and data paths.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "roll/cli/commands.h"
#include "roll/cli/config_options.h"
#include "roll/config/load.h"
#include "roll/config/model_path.h"
#include "roll/config/opd.h"
#include "roll/config/placement.h"
#include "roll/config/reader.h"
#include "roll/config/slot_usage.h"
#include "roll/memory/memory_advice.h"
#include "roll/memory/memory_report.h"

namespace roll::cli {
namespace {

int g_exit_code = 0;

struct ValidateOptions {
  ConfigOptions config;
  std::string pipeline;
  bool show_env = false;
  bool quiet = false;
  bool json = false;
  std::string device;            // --device: the accelerator's name, for its memory
  double device_memory_gb = 0;   // --device-memory-gb
};

void warn_missing_paths(const config::PipelineConfig& c, std::vector<std::string>& warnings) {
  auto model = [&](const std::string& key, const std::optional<std::string>& id) {
    if (!id) return;
    auto found = config::find_model_path(*id);
    if (!found.path)
      warnings.push_back(fmt::format("key '{}': model '{}' is not available locally (searched {}); runs will need "
                                     "`roll model init` or pretrain=<dir>",
                                     key, *id, fmt::join(found.searched, ", ")));
  };
  auto data = [&](const std::string& key, const std::optional<config::DataArguments>& d) {
    if (!d) return;
    for (const auto& f : d->file_name)
      if (!std::filesystem::exists(f))
        warnings.push_back(fmt::format("key '{}': data file '{}' does not exist (relative to {})", key, f,
                                       std::filesystem::current_path().string()));
  };
  if (c.kind == config::PipelineKind::sft) {
    model("sft_train.model_args.model_name_or_path", c.sft_train.model_args.model_name_or_path);
    data("sft_train.data_args.file_name", c.sft_train.data_args);
    return;
  }
  if (c.kind == config::PipelineKind::distill) {
    model("student.model_args.model_name_or_path", c.student.model_args.model_name_or_path);
    model("teacher.model_args.model_name_or_path", c.teacher.model_args.model_name_or_path);
    data("student.data_args.file_name", c.student.data_args);
    if (c.validation) data("validation.data_args.file_name", c.validation->data_args);
    return;
  }
  if (c.kind == config::PipelineKind::dpo) {
    model("actor_train.model_args.model_name_or_path", c.actor_train.model_args.model_name_or_path);
    data("actor_train.data_args.file_name", c.actor_train.data_args);
    if (c.validation) data("validation.data_args.file_name", c.validation->data_args);
    return;
  }
  model("actor_train.model_args.model_name_or_path", c.actor_train.model_args.model_name_or_path);
  if (c.actor_infer.model_args.model_name_or_path != c.actor_train.model_args.model_name_or_path)
    model("actor_infer.model_args.model_name_or_path", c.actor_infer.model_args.model_name_or_path);
  if (c.adv_estimator == "gae") model("critic.model_args.model_name_or_path", c.critic.model_args.model_name_or_path);
  for (size_t i = 0; i < c.opd_teachers.size(); ++i)
    model(config::opd_teacher_key(c, i) + ".model_args.model_name_or_path",
          c.opd_teachers[i].second.model_args.model_name_or_path);
  data("actor_train.data_args.file_name", c.actor_train.data_args);
  if (c.validation) data("validation.data_args.file_name", c.validation->data_args);
}

void run(const ValidateOptions& o) {
  config::LoadRequest req = o.config.load_request();
  if (!o.pipeline.empty()) {
    if (o.pipeline == "rlvr") req.kind = config::PipelineKind::rlvr;
    else if (o.pipeline == "agentic") req.kind = config::PipelineKind::agentic;
    else if (o.pipeline == "sft") req.kind = config::PipelineKind::sft;
    else if (o.pipeline == "dpo") req.kind = config::PipelineKind::dpo;
    else if (o.pipeline == "distill") req.kind = config::PipelineKind::distill;
    else if (o.pipeline == "opd") req.pure_opd = true;
    else throw ConfigError("", fmt::format("--pipeline '{}': expected rlvr, agentic, sft, dpo, distill or opd", o.pipeline));
  }
  auto loaded = config::load_config(req);
  auto plan = config::make_placement_plan(loaded.config, loaded.platform);
  std::vector<std::string> warnings;
  for (const auto& w : loaded.warnings) warnings.push_back(w.message);
  warn_missing_paths(loaded.config, warnings);

  memory::PlanRequest mreq;
  mreq.capacity.device_name = o.device;
  if (o.device_memory_gb > 0) mreq.capacity.device_memory_gb = o.device_memory_gb;
  const memory::MemoryPlan mplan = memory::plan_memory(loaded.config, plan, mreq);
  // Each piece of advice is the same config planned again with its overrides added.
  const memory::Replan replan = [&](const std::vector<std::string>& extra) -> std::optional<memory::MemoryPlan> {
    config::LoadRequest again = req;
    again.compose.overrides.insert(again.compose.overrides.end(), extra.begin(), extra.end());
    try {
      auto l = config::load_config(again);
      return memory::plan_memory(l.config, config::make_placement_plan(l.config, l.platform), mreq);
    } catch (const std::exception&) {
      return std::nullopt;  // that form of the change does not apply to this config
    }
  };
  const auto advice = memory::memory_advice(loaded.config, mplan, replan);
  if (o.json) {
    nlohmann::json j{{"file", loaded.file},
                     {"pipeline", config::pipeline_kind_name(loaded.config.kind)},
                     {"warnings", warnings},
                     {"memory", memory::memory_plan_json(mplan, advice)}};
    std::cout << j.dump(2) << "\n";
    return;
  }
  if (!o.quiet) {
    std::cout << "# " << loaded.file << " (" << config::pipeline_kind_name(loaded.config.kind)
              << " pipeline), resolved with defaults and derived values\n";
    std::cout << config::to_yaml(config::write_pipeline_config(loaded.config)) << "\n\n";
  }
  std::cout << config::format_placement_plan(plan, o.show_env);
  for (const auto& line : config::idle_slot_advice(loaded.config, plan)) std::cout << "note: " << line << "\n";
  std::cout << memory::format_memory_plan(mplan, advice);
  if (mplan.complete() && mplan.capacity.bytes > 0 && !mplan.fits())
    warnings.push_back("the memory plan overflows a device: see the advice above");
  for (const auto& w : warnings) std::cerr << "warning: " << w << "\n";
  std::cout << fmt::format("OK: {} is a valid {} config ({} warning(s))\n", loaded.file,
                           config::pipeline_kind_name(loaded.config.kind), warnings.size());
}

}  // namespace

void set_exit_code(int code) { g_exit_code = code; }
int exit_code() { return g_exit_code; }

void register_defaults(CLI::App& app) {
  auto* cmd = app.add_subcommand("defaults", "Print every config key rollcpp reads, with ROLL's default values");
  cmd->callback([] {
    std::cout << "# Every key of a ROLL pipeline config with its default (rollcpp " << "0.1.0" << ")\n";
    std::cout << config::to_yaml(config::write_pipeline_config(config::PipelineConfig{})) << "\n";
    set_exit_code(0);
  });
}

void register_validate(CLI::App& app) {
  auto opts = std::make_shared<ValidateOptions>();
  auto* cmd = app.add_subcommand("validate", "Check a ROLL config and print the resolved config and placement plan");
  add_config_options(*cmd, opts->config);
  cmd->add_option("--pipeline", opts->pipeline, "rlvr, agentic, sft, dpo, distill or opd (default: detected from the keys)");
  cmd->add_flag("--show-env", opts->show_env, "Print every worker's environment variables");
  cmd->add_flag("-q,--quiet", opts->quiet, "Print only the placement and memory plans");
  cmd->add_flag("--json", opts->json, "Print the memory plan as JSON (with the warnings)");
  cmd->add_option("--device", opts->device,
                  "The accelerator, for its memory: 910B, A2, A3, H100, H200, A100-40GB, ... (NPU default: 910B)");
  cmd->add_option("--device-memory-gb", opts->device_memory_gb,
                  "Memory per device in GB (on CPU: the node's RAM), instead of --device");
  cmd->callback([opts] {
    try {
      run(*opts);
      set_exit_code(0);
    } catch (const config::ConfigErrors& e) {
      print_config_errors(e);
      set_exit_code(1);
    } catch (const Error& e) {
      std::cerr << "error: " << e.what() << "\n";
      set_exit_code(1);
    }
  });
}

}  // namespace roll::cli
