#pragma once
// Typed reads of one scalar config node, for the readers of each layer's own blocks (an engine's
// strategy_config, a trainer's strategy_config, tracker_kwargs). Each returns false, and reports
// the key, file and line to `diag`, on a type error.
#include <cstdint>
#include <string>

#include "roll/config/diagnostics.h"
#include "roll/config/node.h"

namespace roll::config {

bool read_bool(const NodePtr& node, const std::string& path, bool& out, Diagnostics& diag);
bool read_int(const NodePtr& node, const std::string& path, int64_t& out, Diagnostics& diag);
bool read_double(const NodePtr& node, const std::string& path, double& out, Diagnostics& diag);

}  // namespace roll::config
