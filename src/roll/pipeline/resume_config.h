#pragma once
// What a resumed run may change from the run that wrote its checkpoint (docs/compat.md, "Resume").
// The pipeline checkpoint keeps the config as written (composed, before interpolation, overrides
// applied); a resume compares it key by key with its own. Keys that steer only where a run writes,
// what it logs, how it evaluates and how long it goes on may change; any other difference would
// make the resumed steps compute something the checkpoint's run did not, and is refused.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace roll::pipeline {

// The keys (dotted; a key also covers everything under it) that may differ on resume.
const std::vector<std::string>& resume_changeable_keys();

struct ConfigChange {
  std::string key;     // dotted path
  std::string before;  // the checkpoint's value as JSON ("<absent>" when the key was not set)
  std::string after;   // this run's
};

// Every leaf that differs between two configs (nested objects compared key by key; lists and
// scalars as whole values), in key order.
std::vector<ConfigChange> config_changes(const nlohmann::json& before, const nlohmann::json& after);

// Throws ConfigError naming every changed key that may not change (with both values); returns the
// changes that may. `saved` null (a checkpoint from before configs were kept): nothing to compare.
std::vector<ConfigChange> check_resume_config(const std::string& checkpoint_dir, const nlohmann::json& saved,
                                              const nlohmann::json& current);

}  // namespace roll::pipeline
