#include "roll/config/model_path.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "roll/core/error.h"

namespace fs = std::filesystem;

namespace roll::config {
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

std::string home() { return env_or("HOME", "/root"); }

}  // namespace

ModelPathLookup find_model_path(const std::string& id) {
  ModelPathLookup out;
  std::error_code ec;
  out.searched.push_back(id);
  if (fs::is_directory(id, ec)) {
    out.path = id;
    return out;
  }
  // Only hub ids ("org/name" or "name") are looked up in caches; a path stays a path.
  if (id.empty() || id[0] == '/' || id[0] == '.' || id[0] == '~') return out;
  // Hugging Face cache: $HF_HUB_CACHE or $HF_HOME/hub, models--org--name/snapshots/<rev>/
  std::string hub = env_or("HF_HUB_CACHE", env_or("HF_HOME", home() + "/.cache/huggingface") + "/hub");
  std::string flat = id;
  for (size_t pos = 0; (pos = flat.find('/', pos)) != std::string::npos; pos += 2) flat.replace(pos, 1, "--");
  fs::path snapshots = fs::path(hub) / ("models--" + flat) / "snapshots";
  out.searched.push_back(snapshots.string());
  if (fs::is_directory(snapshots, ec)) {
    fs::path newest;
    fs::file_time_type newest_time{};
    for (const auto& e : fs::directory_iterator(snapshots, ec)) {
      if (!e.is_directory()) continue;
      auto t = e.last_write_time(ec);
      if (newest.empty() || t > newest_time) {
        newest = e.path();
        newest_time = t;
      }
    }
    if (!newest.empty()) {
      out.path = newest.string();
      return out;
    }
  }
  // ModelScope cache: $MODELSCOPE_CACHE (default ~/.cache/modelscope/hub), <org>/<name> or models/<org>/<name>.
  std::string ms = env_or("MODELSCOPE_CACHE", home() + "/.cache/modelscope/hub");
  for (fs::path p : {fs::path(ms) / id, fs::path(ms) / "models" / id}) {
    out.searched.push_back(p.string());
    if (fs::is_directory(p, ec)) {
      out.path = p.string();
      return out;
    }
  }
  return out;
}

std::string resolve_model_path(const std::string& id, const std::string& key) {
  auto found = find_model_path(id);
  if (found.path) return *found.path;
  std::string places;
  for (const auto& s : found.searched) places += "\n  " + s;
  throw ConfigError(key, fmt::format("{}: model '{}' was not found locally (rollcpp never downloads). Searched:{}\n"
                                     "Create one with `roll model init --preset tiny --out DIR` and pass "
                                     "pretrain=DIR (or {}=DIR).",
                                     key, id, places, key));
}

}  // namespace roll::config
