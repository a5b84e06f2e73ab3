#include "roll/memory/device_capacity.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "roll/core/error.h"

namespace roll::memory {
namespace {

constexpr double kGB = 1e9;
constexpr double kHostShare = 0.95;

// Memory per device as the vendors state it (decimal GB).
const std::vector<std::pair<const char*, double>>& known_devices() {
  static const std::vector<std::pair<const char*, double>> table = {
      {"910b", 64}, {"a2", 64}, {"a3", 64}, {"910c", 64},  // Ascend: 64 GB HBM per NPU (die)
      {"h200", 141}, {"h100", 80}, {"h800", 80}, {"h20", 96}, {"a100-80gb", 80}, {"a100-40gb", 40},
      {"a100", 80}, {"a800", 80}, {"l40s", 48}, {"l40", 48}, {"a10", 24}, {"l4", 24}, {"rtx4090", 24},
      {"4090", 24}, {"v100", 32}, {"b200", 192},
  };
  return table;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

DeviceCapacity device_capacity(const CapacityRequest& r) {
  DeviceCapacity c;
  const bool npu = r.platform == config::Platform::npu || r.platform == config::Platform::npu_emulated;
  if (r.platform == config::Platform::cpu) {
    c.shared_by_node = true;
    const int64_t ram = r.device_memory_gb ? static_cast<int64_t>(*r.device_memory_gb * kGB) : r.host_memory_bytes;
    // The kernel and the rest of the system keep a share: a plan that fills the last 5% of RAM
    // meets the OOM killer (measured: a 0.5B run predicted at 99% of RAM was killed).
    c.bytes = static_cast<int64_t>(static_cast<double>(ram) * kHostShare);
    c.description = fmt::format("host RAM {:.1f} GB per node{}, {:.0f}% of it for the workers, shared by them",
                                static_cast<double>(ram) / kGB, r.device_memory_gb ? " (--device-memory-gb)" : "",
                                100 * kHostShare);
    return c;
  }
  double gb = 0;
  std::string what;
  if (r.device_memory_gb) {
    gb = *r.device_memory_gb;
    what = fmt::format("{:.0f} GB (--device-memory-gb)", gb);
  } else {
    std::string name = lower(r.device_name.empty() && npu ? "910B" : r.device_name);
    if (name.empty()) {
      c.description = "unknown device memory: pass --device NAME or --device-memory-gb N for a verdict";
      return c;
    }
    for (const auto& [known, size] : known_devices()) {
      const std::string k = known;
      if (name == k || name.find(k) != std::string::npos) {
        gb = size;
        what = fmt::format("{} {:.0f} GB", r.device_name.empty() ? "Ascend 910B" : r.device_name, size);
        break;
      }
    }
    if (gb == 0) {
      std::string names;
      for (const auto& [known, size] : known_devices()) names += std::string(names.empty() ? "" : ", ") + known;
      throw ConfigError("--device", fmt::format("device '{}' is not in the table ({}); pass --device-memory-gb instead",
                                                r.device_name, names));
    }
  }
  double fraction = 1.0;
  if (npu && r.npu_memory_fraction) {
    fraction = *r.npu_memory_fraction;
    if (!(fraction > 0 && fraction <= 1))
      throw ConfigError("system_envs.NPU_MEMORY_FRACTION",
                        fmt::format("NPU_MEMORY_FRACTION must be in (0, 1], got {}", fraction));
    what += fmt::format(" x NPU_MEMORY_FRACTION {}", fraction);
  }
  c.bytes = static_cast<int64_t>(gb * kGB * fraction);
  c.description = what;
  return c;
}

}  // namespace roll::memory
