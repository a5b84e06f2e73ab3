#include "roll/cli/config_options.h"

#include <CLI/CLI.hpp>

#include <iostream>

namespace roll::cli {

config::LoadRequest ConfigOptions::load_request(std::optional<config::PipelineKind> kind) const {
  config::LoadRequest req;
  req.compose = {config_path, config_name, overrides};
  req.kind = kind;
  if (!platform.empty()) req.platform = config::parse_platform(platform);
  if (devices_per_node > 0) req.devices_per_node = devices_per_node;
  return req;
}

void add_config_options(CLI::App& cmd, ConfigOptions& o) {
  cmd.add_option("--config_path,--config-path", o.config_path,
                 "Directory of the config (relative to the current directory or absolute)");
  cmd.add_option("--config_name,--config-name", o.config_name, "Config file name, with or without .yaml")->required();
  cmd.add_option("--platform", o.platform, "cpu, cuda, npu or npu-emulated (default: ROLL_PLATFORM or detected)");
  cmd.add_option("--devices-per-node", o.devices_per_node, "Overrides num_gpus_per_node");
  cmd.add_option("overrides", o.overrides, "key=value overrides applied after composition");
}

void print_config_errors(const config::ConfigErrors& e) {
  std::cerr << "error: " << e.errors().size() << " problem(s) in the config:\n";
  for (const auto& d : e.errors()) std::cerr << "  - " << d.message << "\n";
}

}  // namespace roll::cli
