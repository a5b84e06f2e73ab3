#pragma once
// A config subtree as typed JSON, for the parts of a config that are free-form mappings (an env's
// env_config, a strategy_config): scalars keep their YAML type (quoted -> string, true/false ->
// bool, integers, floats, else string), null stays null.
#include <nlohmann/json.hpp>

#include "roll/config/node.h"

namespace roll::config {

nlohmann::ordered_json to_json(const NodePtr& node);

}  // namespace roll::config
