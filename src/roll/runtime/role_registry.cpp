#include <map>
#include <mutex>

#include "roll/core/error.h"
#include "roll/runtime/role.h"

namespace roll::runtime {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, RoleFactory>& registry() {
  static std::map<std::string, RoleFactory> r;
  return r;
}

}  // namespace

void register_role(const std::string& name, RoleFactory factory) {
  std::lock_guard<std::mutex> g(registry_mutex());
  registry()[name] = std::move(factory);
}

std::vector<std::string> registered_roles() {
  std::lock_guard<std::mutex> g(registry_mutex());
  std::vector<std::string> names;
  for (const auto& [name, _] : registry()) names.push_back(name);
  return names;
}

std::unique_ptr<Role> make_role(const std::string& name, WorkerContext& context) {
  RoleFactory factory;
  {
    std::lock_guard<std::mutex> g(registry_mutex());
    auto it = registry().find(name);
    if (it == registry().end()) {
      std::string known;
      for (const auto& [n, _] : registry()) known += (known.empty() ? "" : ", ") + n;
      throw Error("worker " + context.worker_name + ": unknown role '" + name + "' (registered: " + known + ")");
    }
    factory = it->second;
  }
  return factory(context);
}

}  // namespace roll::runtime
