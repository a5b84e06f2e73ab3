#pragma once
// A YAML mapping read into a list that keeps the file's order (domains, envs, system_envs).
#include <string>
#include <utility>
#include <vector>

namespace roll::config {

template <typename T>
using Ordered = std::vector<std::pair<std::string, T>>;  // YAML order matters (domains, envs)

}  // namespace roll::config
