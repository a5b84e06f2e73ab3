#pragma once
// A driver Runtime for tests whose worker processes are this test binary (`--roll-worker`, see
// test_main.cpp): logs and scratch under `dir`, worker output kept out of the test's own.
#include <chrono>
#include <filesystem>
#include <string>

#include "roll/runtime/runtime.h"

namespace roll::test {

// A CPU-only cluster placement of `world` workers named like ROLL's (cluster-rank) running `role`.
inline runtime::ClusterSpec cpu_cluster_spec(const std::string& name, int world, const std::string& role) {
  runtime::ClusterSpec spec;
  spec.placement.name = name;
  spec.placement.cpu_only = true;
  for (int r = 0; r < world; ++r) {
    config::WorkerPlacement w;
    w.name = name + "-" + std::to_string(r);
    w.rank = r;
    spec.placement.workers.push_back(w);
  }
  spec.role = role;
  return spec;
}

inline runtime::RuntimeOptions worker_runtime_options(const std::string& dir) {
  runtime::RuntimeOptions o;
  o.worker_command = {std::filesystem::read_symlink("/proc/self/exe").string(), "--roll-worker"};
  o.log_dir = dir + "/logs";
  o.run_dir = dir;
  o.rpc_timeout = std::chrono::seconds(60);
  o.forward_output = false;
  o.cores = 2;
  return o;
}

}  // namespace roll::test
