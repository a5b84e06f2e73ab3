#pragma once
// The environment interface of the agentic pipeline (docs/agentic.md): text observations, text actions
// parsed by the env itself, a reward per step and ROLL's info metrics.
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace roll::agentic {

struct EnvReset {
  std::string observation;
  nlohmann::json info;  // env_instruction (and suffix when an env has one)
};

struct EnvStep {
  std::string observation;
  double reward = 0.0;
  bool terminated = false;
  bool truncated = false;
  // metrics {action_is_effective, action_is_valid, success, format_penalty}, metrics_agg_mode,
  // action_desc, action_content, think_content
  nlohmann::json info;
};

class Env {
 public:
  virtual ~Env() = default;
  // Starts an episode; the same seed gives the same initial state.
  virtual EnvReset reset(uint64_t seed) = 0;
  // Applies the model's response text (the env parses the action out of it).
  virtual EnvStep step(const std::string& response) = 0;
  virtual std::string render() const = 0;
  // env_instruction + symbol meanings + available actions (ROLL's get_instructions()).
  virtual std::string instructions() const = 0;
  // The regex the env parses actions with (env_config.action_pattern or the env's default).
  virtual const std::string& action_pattern() const = 0;
  // A hashable description of the current state (StepEnvManager / GiGPO state groups).
  virtual std::string state_key() const { return render(); }
};

// ROLL's step info: metrics {action_is_effective, action_is_valid, success, format_penalty} with
// their aggregation modes {mean, mean, last, mean}, and the action description.
nlohmann::json step_info(bool effective, bool valid, bool success, double format_penalty, const std::string& desc,
                         const std::string& action_content, const std::string& think_content);
// "At turn k, you moved X, which is effective." / "... tried to move X, which is not effective yet."
// / "... You did not provide a valid action." (action empty).
std::string action_description(int turn, const std::string& action, bool effective);

// Builds an env from a custom_envs entry's env_type and env_config (docs/config.md); errors name the
// env type or the config key at fault.
std::unique_ptr<Env> make_env(const std::string& env_type, const nlohmann::ordered_json& env_config);

}  // namespace roll::agentic
