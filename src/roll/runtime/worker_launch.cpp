#include "roll/runtime/worker_launch.h"

#include <cstdlib>

#include "roll/core/error.h"
#include "roll/runtime/child_process.h"

namespace roll::runtime {
namespace {

std::string need(const char* name) {
  const char* v = std::getenv(name);
  if (!v) throw Error(std::string("worker host: environment variable ") + name + " is not set (workers are started by the driver)");
  return v;
}

int need_int(const char* name) {
  std::string v = need(name);
  try {
    size_t used = 0;
    int x = std::stoi(v, &used);
    if (used != v.size()) throw std::invalid_argument(v);
    return x;
  } catch (const std::exception&) {
    throw Error(std::string("worker host: ") + name + "='" + v + "' is not an integer");
  }
}

}  // namespace

std::map<std::string, std::string> WorkerLaunch::to_env() const {
  std::string devices;
  for (int d : local_devices) devices += (devices.empty() ? "" : ",") + std::to_string(d);
  return {
      {"CLUSTER_NAME", cluster},
      {"WORKER_NAME", worker_name},
      {"RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(world_size)},
      {"LOCAL_RANK", "0"},
      {"ROLL_LOG_DIR", log_dir},
      {"ROLL_ROLE", role},
      {"ROLL_NODE_RANK", std::to_string(node_rank)},
      {"ROLL_LOCAL_DEVICES", devices},
      {"ROLL_THREADS", std::to_string(threads)},
      {"ROLL_STORE_HOST", store_host},
      {"ROLL_STORE_PORT", std::to_string(store_port)},
      {"ROLL_BIND_HOST", bind_host},
      {"ROLL_RUN_DIR", run_dir},
      {"ROLL_DRIVER_PID", std::to_string(driver_pid)},
      {"ROLL_WORKER_OPTIONS", options.dump()},
  };
}

WorkerLaunch WorkerLaunch::from_env() {
  WorkerLaunch w;
  w.cluster = need("CLUSTER_NAME");
  w.worker_name = need("WORKER_NAME");
  w.rank = need_int("RANK");
  w.world_size = need_int("WORLD_SIZE");
  w.log_dir = need("ROLL_LOG_DIR");
  w.role = need("ROLL_ROLE");
  w.node_rank = need_int("ROLL_NODE_RANK");
  std::string devices = need("ROLL_LOCAL_DEVICES");
  for (size_t pos = 0; pos < devices.size();) {
    size_t comma = devices.find(',', pos);
    if (comma == std::string::npos) comma = devices.size();
    w.local_devices.push_back(std::stoi(devices.substr(pos, comma - pos)));
    pos = comma + 1;
  }
  w.threads = need_int("ROLL_THREADS");
  w.store_host = need("ROLL_STORE_HOST");
  w.store_port = static_cast<uint16_t>(need_int("ROLL_STORE_PORT"));
  w.bind_host = need("ROLL_BIND_HOST");
  w.run_dir = need("ROLL_RUN_DIR");
  w.driver_pid = need_int("ROLL_DRIVER_PID");
  try {
    w.options = nlohmann::json::parse(need("ROLL_WORKER_OPTIONS"));
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("worker host: ROLL_WORKER_OPTIONS is not JSON: ") + e.what());
  }
  return w;
}

std::string worker_log_file(const std::string& log_dir, const std::string& worker_name, int rank, int world_size) {
  return log_dir + "/log_rank_" + worker_name + "_" + std::to_string(rank) + "_" + std::to_string(world_size) + ".log";
}

std::string WorkerLaunch::log_file() const { return worker_log_file(log_dir, worker_name, rank, world_size); }

std::map<std::string, std::string> worker_environment(const std::map<std::string, std::string>& settings) {
  // Visibility variables of every platform: a worker inherits none of them.
  constexpr const char* kVisibilityVars[] = {"CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES",
                                             "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"};
  std::map<std::string, std::string> env = current_environment();
  for (const char* v : kVisibilityVars) env.erase(v);
  for (const auto& [k, v] : settings) env[k] = v;
  env["GLIBC_TUNABLES"] = with_malloc_hugepages(env["GLIBC_TUNABLES"]);
  return env;
}

std::string with_malloc_hugepages(const std::string& tunables) {
  if (tunables.find("glibc.malloc.hugetlb=") != std::string::npos) return tunables;  // the user's choice
  return tunables.empty() ? "glibc.malloc.hugetlb=1" : tunables + ":glibc.malloc.hugetlb=1";
}

std::string service_bind_host() {
  const char* v = std::getenv("ROLL_BIND_HOST");
  return v && *v ? v : "127.0.0.1";
}

std::string endpoint_key(const std::string& cluster, int rank) {
  return "worker/" + cluster + "/" + std::to_string(rank) + "/endpoint";
}
std::string failure_key(const std::string& cluster, int rank) {
  return "worker/" + cluster + "/" + std::to_string(rank) + "/failure";
}

}  // namespace roll::runtime
