#pragma once
// The options every command that loads a ROLL config takes (validate, rlvr, agentic, sft):
// --config_path, --config_name, --platform, --devices-per-node and key=value overrides.
#include <optional>
#include <string>
#include <vector>

#include "roll/config/load.h"

namespace CLI {
class App;
}

namespace roll::cli {

struct ConfigOptions {
  std::string config_path = ".";
  std::string config_name;
  std::string platform;
  int devices_per_node = 0;
  std::vector<std::string> overrides;

  config::LoadRequest load_request(std::optional<config::PipelineKind> kind = std::nullopt) const;
};

void add_config_options(CLI::App& cmd, ConfigOptions& o);

// Prints a ConfigErrors list (every problem with its key, file and line) to stderr.
void print_config_errors(const config::ConfigErrors& e);

}  // namespace roll::cli
