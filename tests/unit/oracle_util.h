#pragma once
// Runs one of the float64 numpy oracles of tests/oracles (IN json -> OUT json) with Debian's
// python3, for the rl/ loss tests.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "config_test_util.h"

namespace roll::testing {

// tests/oracles/`script` run on `in`: its output; nullopt when Debian's python3 has no numpy (the
// caller skips), nullopt and a test failure naming the command when the oracle fails.
inline std::optional<nlohmann::json> run_oracle(const std::string& script, const nlohmann::json& in) {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) return std::nullopt;
  TempConfigDir dir;
  const std::string in_path = dir.write("in.json", in.dump());  // doubles dumped so they read back exactly
  const std::string out_path = dir.path() + "/out.json";
  const std::string cmd = "/usr/bin/python3 " + source_dir() + "/tests/oracles/" + script + " " + in_path + " " + out_path;
  std::optional<nlohmann::json> out;
  if (std::system(cmd.c_str()) == 0) {
    std::ifstream f(out_path);
    if (f) out = nlohmann::json::parse(f);
  }
  if (!out) ADD_FAILURE() << "oracle failed: " << cmd;
  return out;
}

}  // namespace roll::testing
