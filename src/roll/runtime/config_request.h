#pragma once
// The job's config travels to workers as the request that loads it (paths, overrides, platform),
// published in the store, so every process types and derives it exactly as the driver did.
#include <nlohmann/json.hpp>

#include "roll/config/load.h"

namespace roll::runtime {

nlohmann::json config_request_to_json(const config::LoadRequest& request);  // config_path made absolute
config::LoadRequest config_request_from_json(const nlohmann::json& j);

}  // namespace roll::runtime
