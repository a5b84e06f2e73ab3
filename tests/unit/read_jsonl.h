#pragma once
// One JSON value per non-empty line of a file (the tests' fixture and output tables).
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace roll::testing {

inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

}  // namespace roll::testing
