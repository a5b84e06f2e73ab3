// Runs every fuzz target over the files of its corpus (seeds and the inputs of past findings), so
// the unit phase re-checks them on each build without libFuzzer:
//   roll_fuzz_replay CORPUS_ROOT                 every target over CORPUS_ROOT/<target>/**
//   roll_fuzz_replay --target NAME FILE...       one target over the named files (reproducing a finding)
// Exits non-zero when a target has no corpus directory or refuses one of its seeds (seed-* files are
// valid inputs: a refusal means the target no longer reaches its parser); a finding aborts
// (see fuzz_target.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_target.h"

namespace fs = std::filesystem;
using roll::fuzz::Target;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

const Target* find_target(const std::string& name) {
  for (const auto& t : roll::fuzz::targets())
    if (name == t.name) return &t;
  return nullptr;
}

// Returns whether the parser accepted the file.
bool run_file(const Target& t, const fs::path& file) {
  std::fprintf(stderr, "%s <- %s\n", t.name, file.c_str());
  const std::string refusal = roll::fuzz::run_target(t, slurp(file));
  if (!refusal.empty()) std::fprintf(stderr, "  refused: %s\n", refusal.c_str());
  return refusal.empty();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "--target") == 0) {
    const Target* t = find_target(argv[2]);
    if (t == nullptr) {
      std::fprintf(stderr, "no fuzz target named %s\n", argv[2]);
      return 2;
    }
    for (int i = 3; i < argc; ++i) (void)run_file(*t, argv[i]);
    return 0;
  }
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_ROOT | --target NAME FILE...\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  int missing = 0;  // targets without a corpus, and refused seeds
  for (const auto& t : roll::fuzz::targets()) {
    const fs::path dir = root / t.name;
    if (!fs::is_directory(dir)) {
      std::fprintf(stderr, "fuzz target %s has no corpus at %s\n", t.name, dir.c_str());
      ++missing;
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    const auto files = files_under(dir);
    size_t accepted = 0;
    for (const auto& f : files) {
      const bool ok = run_file(t, f);
      accepted += ok;
      if (!ok && f.filename().string().rfind("seed-", 0) == 0) {
        std::fprintf(stderr, "fuzz target %s refuses its seed %s\n", t.name, f.c_str());
        ++missing;
      }
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("%-22s %4zu inputs, %4zu accepted %8.1f ms\n", t.name, files.size(), accepted, ms);
  }
  return missing == 0 ? 0 : 1;
}
