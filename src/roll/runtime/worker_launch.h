#pragma once
// How the driver tells a worker process who it is: environment variables (ROLL's own names where
// ROLL sets them: RANK, WORLD_SIZE, LOCAL_RANK, CLUSTER_NAME, WORKER_NAME, ROLL_LOG_DIR; ours are
// ROLL_*). Written by the driver, read by the worker host.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace roll::runtime {

struct WorkerLaunch {
  std::string cluster;
  std::string role;
  std::string worker_name;
  int rank = 0;
  int world_size = 1;
  int node_rank = 0;
  std::vector<int> local_devices;
  int threads = 1;
  std::string store_host = "127.0.0.1";
  uint16_t store_port = 0;
  std::string bind_host = "127.0.0.1";  // where the worker's RPC endpoint listens
  std::string log_dir;
  std::string run_dir;
  pid_t driver_pid = 0;
  nlohmann::json options = nlohmann::json::object();

  // The variables above, to merge into the worker's environment.
  std::map<std::string, std::string> to_env() const;
  // Reads them back; throws roll::Error naming a missing or malformed variable.
  static WorkerLaunch from_env();
  // <log_dir>/log_rank_<WORKER_NAME>_<RANK>_<WORLD_SIZE>.log (docs/runtime.md)
  std::string log_file() const;
};

// The log file a worker writes: <log_dir>/log_rank_<WORKER_NAME>_<RANK>_<WORLD_SIZE>.log.
std::string worker_log_file(const std::string& log_dir, const std::string& worker_name, int rank, int world_size);

// A worker's complete environment: this process's, without any platform's device visibility
// variable (the placement sets its own), with `settings` over it, and GLIBC_TUNABLES extended by
// with_malloc_hugepages.
std::map<std::string, std::string> worker_environment(const std::map<std::string, std::string>& settings);

// GLIBC_TUNABLES `tunables` plus glibc.malloc.hugetlb=1 unless it sets hugetlb already. Why:
// ATen tensors above glibc's mmap threshold (attention scores, activations of a training step)
// are fresh mmaps, faulted in 4 KiB pages on every step; with transparent huge pages (madvise)
// a training worker took ~20x fewer page faults and ~40% less CPU (docs/benchmarks.md).
std::string with_malloc_hugepages(const std::string& tunables);

// Where a service the driver hosts binds: ROLL_BIND_HOST (this node's address, set on the head
// of a multi-node job), else 127.0.0.1.
std::string service_bind_host();

// Store keys of a worker (the driver waits on them).
std::string endpoint_key(const std::string& cluster, int rank);
std::string failure_key(const std::string& cluster, int rank);
// The key under which the driver publishes how to load the job's config.
inline constexpr const char* kConfigRequestKey = "run/config_request";

}  // namespace roll::runtime
