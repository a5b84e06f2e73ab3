#pragma once
// ROLL's `device_mapping` expressions (Python-evaluated in ROLL): `list(range(a,b[,s]))`,
// `list([..])`, `[..]` (a YAML list or a quoted '[..]'), any of them joined by `+`.
#include <string>
#include <vector>

namespace roll::config {

// Parses `text`; errors (ConfigError) name `key` and point at the offending character.
std::vector<int> parse_device_mapping(const std::string& text, const std::string& key);

// "0-3", "0,2,5", "0-3,8-11": a compact form for logs and `roll validate`.
std::string format_device_ids(const std::vector<int>& ids);

}  // namespace roll::config
