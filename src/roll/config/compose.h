#pragma once
// Hydra-style composition of ROLL's YAML: the `defaults:` list (`- ../config/traj_envs@_here_`,
// `- group: option`, `_self_`), then command-line overrides. Interpolation happens afterwards
// (interpolate.h), so `${...}` sees the primary file's values and the overrides.
#include <string>
#include <vector>

#include "roll/config/node.h"

namespace roll::config {

struct ComposeRequest {
  std::string config_path;             // directory, relative to the current directory or absolute
  std::string config_name;             // file name inside it, with or without ".yaml"
  std::vector<std::string> overrides;  // "a.b=value", "+a.b=value", "++a.b=value", "~a.b"
};

// Returns the composed, not yet interpolated tree. Throws ConfigError naming the file and line
// of a bad `defaults` entry or a missing include.
NodePtr compose(const ComposeRequest& request);

// Applies one override in place (Hydra grammar subset; the value is parsed as YAML).
void apply_override(const NodePtr& root, const std::string& override_text);

// Resolves `config_path` + `config_name` to an existing file, or throws naming what was tried.
std::string find_config_file(const std::string& config_path, const std::string& config_name);

}  // namespace roll::config
