#include <fmt/format.h>

#include "roll/agentic/env.h"
#include "roll/agentic/frozen_lake.h"
#include "roll/agentic/sokoban.h"
#include "roll/core/error.h"

namespace roll::agentic {

std::unique_ptr<Env> make_env(const std::string& env_type, const nlohmann::ordered_json& env_config) {
  const nlohmann::ordered_json cfg = env_config.is_null() ? nlohmann::ordered_json::object() : env_config;
  if (env_type == "frozen_lake") return std::make_unique<FrozenLake>(FrozenLakeConfig::from_json(cfg));
  if (env_type == "sokoban") return std::make_unique<Sokoban>(SokobanConfig::from_json(cfg));
  throw NotSupportedError(fmt::format("environment type '{}'", env_type));
}

}  // namespace roll::agentic
