#pragma once
// Model path resolution (docs/design.md section 4): an existing directory; else a hub id found in the
// local caches; else an error naming the key, the id and the places searched. Never a download.
#include <optional>
#include <string>
#include <vector>

namespace roll::config {

struct ModelPathLookup {
  std::optional<std::string> path;     // the directory found
  std::vector<std::string> searched;   // every place looked at, for the error message
};

ModelPathLookup find_model_path(const std::string& name_or_path);

// Returns the directory or throws ConfigError naming `key`, the id, the places searched and
// suggesting `roll model init` or `pretrain=<dir>`.
std::string resolve_model_path(const std::string& name_or_path, const std::string& key);

}  // namespace roll::config
