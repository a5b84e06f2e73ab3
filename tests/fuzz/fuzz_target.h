#pragma once
// One fuzz target: a function that feeds bytes to a parser. A target returns normally when the
// parser accepts the bytes or rejects them with roll::Error (a message for the user); anything else
// (another exception type, a crash, a sanitizer report, a hang) is a finding.
//
// The same target files build two ways (tests/fuzz/README.md):
//   libFuzzer   one executable per target (tests/fuzz/CMakeLists.txt, clang, scripts/fuzz)
//   replay      roll_fuzz_replay runs every target over its corpus/<target>/ files in the unit phase
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace roll::fuzz {

using TargetFn = void (*)(std::string_view bytes);

struct Target {
  const char* name;
  TargetFn fn;
};

// Registers a target at static-initialisation time; returns its index.
int register_target(const char* name, TargetFn fn);
const std::vector<Target>& targets();

// Runs `fn` on `bytes`: returns "" when the parser accepted them, the roll::Error's message when
// it refused them, and aborts naming the target and the exception on anything else (the finding
// libFuzzer and the replay report).
std::string run_target(const Target& target, std::string_view bytes);

// A private scratch directory for the process (created once, removed at exit).
const std::string& scratch_dir();
// Writes `bytes` to scratch_dir()/name and returns the path.
std::string write_scratch(const std::string& name, std::string_view bytes);

// Splits `bytes` into at most `parts` pieces at the separator line "\n--\n" (the corpus files use it
// to hold several files in one input); missing pieces are empty.
std::vector<std::string_view> split_parts(std::string_view bytes, size_t parts);

}  // namespace roll::fuzz

#define ROLL_FUZZ_TARGET(target_name)                                                              \
  static void roll_fuzz_##target_name(std::string_view bytes);                                    \
  [[maybe_unused]] static const int roll_fuzz_registered_##target_name =                          \
      ::roll::fuzz::register_target(#target_name, &roll_fuzz_##target_name);                      \
  static void roll_fuzz_##target_name(std::string_view bytes)
