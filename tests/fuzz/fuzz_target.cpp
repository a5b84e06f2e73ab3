#include "fuzz_target.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <typeinfo>

#include "roll/core/error.h"

namespace roll::fuzz {
namespace {

std::vector<Target>& registry() {
  static std::vector<Target> all;
  return all;
}

}  // namespace

int register_target(const char* name, TargetFn fn) {
  registry().push_back({name, fn});
  return static_cast<int>(registry().size()) - 1;
}

const std::vector<Target>& targets() { return registry(); }

std::string run_target(const Target& target, std::string_view bytes) {
  try {
    target.fn(bytes);
    return "";
  } catch (const roll::Error& e) {
    const std::string what = e.what();
    return what.empty() ? "(roll::Error without a message)" : what;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz target %s: %s escaped instead of roll::Error: %s\n", target.name,
                 typeid(e).name(), e.what());
    std::abort();
  }
}

const std::string& scratch_dir() {
  static const std::string dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "roll-fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    static const std::string to_remove = pattern;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(to_remove, ec);
    });
    return pattern;
  }();
  return dir;
}

std::string write_scratch(const std::string& name, std::string_view bytes) {
  const std::filesystem::path path = std::filesystem::path(scratch_dir()) / name;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path.string();
}

std::vector<std::string_view> split_parts(std::string_view bytes, size_t parts) {
  static constexpr std::string_view kSeparator = "\n--\n";
  std::vector<std::string_view> out;
  while (out.size() + 1 < parts) {
    const size_t at = bytes.find(kSeparator);
    if (at == std::string_view::npos) break;
    out.push_back(bytes.substr(0, at));
    bytes.remove_prefix(at + kSeparator.size());
  }
  out.push_back(bytes);
  out.resize(parts);
  return out;
}

}  // namespace roll::fuzz
