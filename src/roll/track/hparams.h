#pragma once
// A run's hparams: the resolved config flattened to name -> scalar, and the markdown table the
// tensorboard tracker shows as its `hparams` text.
#include <string>

#include <nlohmann/json.hpp>

#include "roll/config/node.h"

namespace roll::track {

// Maps become dotted keys ("actor_train.model_args.dtype"); scalars keep their YAML type
// (quoted -> string, true/false -> bool, integers, floats); lists become their JSON text and
// null becomes "None" (ROLL stringifies non-scalars with str()).
nlohmann::json flatten_config(const config::NodePtr& tree);

// | name | value | rows, one per entry of a flat object ("|" in values escaped).
std::string hparams_markdown(const nlohmann::json& flat);

}  // namespace roll::track
