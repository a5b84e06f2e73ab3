#pragma once
// OmegaConf `${...}` interpolation, resolved once after composition and overrides:
//   ${a.b}            whole-node reference when it is the entire value (keeps type: a mapping stays a mapping)
//   x-${a.b}-y        string interpolation
//   ${.sibling}       relative reference (one dot per level up)
//   ${oc.env:VAR[,default]}, ${now:%Y%m%d}  resolvers; other `oc.*` resolvers are errors naming them
// Cycles and missing keys are errors naming the key, its file and line.
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "roll/config/node.h"

namespace roll::config {

struct ResolveOptions {
  // Environment lookup (tests inject their own); default reads the process environment.
  std::function<std::optional<std::string>(const std::string&)> getenv;
};

// `referenced` (optional) receives the dotted path of every key an interpolation read: such keys
// are variables of the config, not typos, and get no unknown-key warning.
NodePtr resolve(const NodePtr& root, const ResolveOptions& options = {}, std::set<std::string>* referenced = nullptr);

}  // namespace roll::config
