#pragma once
// How much memory one device of the placement offers the plan (docs/memory.md, "Capacities"):
// Ascend NPUs (64 GB per NPU on 910B/A2 and A3) times NPU_MEMORY_FRACTION, CUDA GPUs by name or
// size, and on CPU the node's host RAM, which all of the node's workers share.
#include <cstdint>
#include <optional>
#include <string>

#include "roll/config/platform.h"

namespace roll::memory {

struct DeviceCapacity {
  int64_t bytes = 0;         // 0: unknown (no verdict, only the estimate)
  bool shared_by_node = false;  // CPU: one pool per node for every worker on it
  std::string description;   // "Ascend 910B, 64 GB x NPU_MEMORY_FRACTION 0.96"
};

struct CapacityRequest {
  config::Platform platform = config::Platform::cpu;
  std::string device_name;                 // --device: "910B", "A3", "H100", "A100-40GB", ...
  std::optional<double> device_memory_gb;  // --device-memory-gb (decimal GB, as vendors count)
  std::optional<double> npu_memory_fraction;  // NPU_MEMORY_FRACTION from the config's system_envs
  int64_t host_memory_bytes = 0;           // this machine's RAM (CPU platform)
};

// Throws ConfigError naming --device for a name the table does not know.
DeviceCapacity device_capacity(const CapacityRequest& request);

}  // namespace roll::memory
