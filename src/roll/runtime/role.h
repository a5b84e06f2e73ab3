#pragma once
// What a worker process hosts. runtime/ knows no role: workers/ (and tests) register factories
// by role name, and the worker host creates the one its launch names (docs/design.md section 2).
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "roll/config/load.h"

namespace roll::comm {
class Store;
}

namespace roll::runtime {

class RpcServer;

// Everything a role learns about its place in the run.
struct WorkerContext {
  std::string cluster;      // actor_train, actor_infer, reward-math_rule, ...
  std::string role;         // the registered factory name
  std::string worker_name;  // ROLL's worker name, e.g. actor_infer-0-G01
  int rank = 0;
  int world_size = 1;
  int node_rank = 0;
  int threads = 1;          // ATen threads set for this process
  std::vector<int> local_devices;
  std::string log_dir;
  std::string run_dir;      // scratch space of this run, shared by its workers on a node
  std::shared_ptr<comm::Store> store;           // the run's store (rendezvous, published services)
  std::optional<config::LoadedConfig> config;   // the job's config, loaded as the driver loaded it
  nlohmann::json options = nlohmann::json::object();  // per-cluster options from the driver
};

class Role {
 public:
  virtual ~Role() = default;
  // Registers the role's methods on the worker's server.
  virtual void bind(RpcServer& server) = 0;
};

using RoleFactory = std::function<std::unique_ptr<Role>(WorkerContext& context)>;

// Registration is static (before main) or early in main; the last registration of a name wins.
void register_role(const std::string& name, RoleFactory factory);
// Throws roll::Error naming the role and the registered ones when `name` is unknown.
std::unique_ptr<Role> make_role(const std::string& name, WorkerContext& context);
std::vector<std::string> registered_roles();

}  // namespace roll::runtime
