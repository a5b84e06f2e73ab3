#pragma once
// The Jinja2 oracle the template tests compare against (tests/oracles/render_template.py, run by
// Debian's python3 with python3-jinja2).
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace roll::testing {

// Renders `cases` ([{source|template, context}]) with the Python oracle; nullopt when Debian's
// python3 with jinja2 is not installed (the tests then skip). A failed oracle run is a test failure.
inline std::optional<nlohmann::ordered_json> run_jinja_oracle(const nlohmann::ordered_json& cases) {
  if (std::system("/usr/bin/python3 -c 'import jinja2' >/dev/null 2>&1") != 0) return std::nullopt;
  static std::atomic<int> counter{0};
  const auto dir = std::filesystem::temp_directory_path() /
                   ("roll_jinja_oracle_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "cases.json") << cases.dump();
  const std::string cmd = "/usr/bin/python3 " + std::string(ROLL_SOURCE_DIR) + "/tests/oracles/render_template.py " +
                          (dir / "cases.json").string() + " " + (dir / "out.json").string();
  const int rc = std::system(cmd.c_str());
  std::ifstream in(dir / "out.json");
  std::optional<nlohmann::ordered_json> out;
  if (rc == 0 && in) out = nlohmann::ordered_json::parse(in);
  std::filesystem::remove_all(dir);
  if (!out) ADD_FAILURE() << "oracle failed: " << cmd;
  return out;
}

}  // namespace roll::testing
