#pragma once
// The platform rules table (docs/design.md section 5): what differs between cpu, cuda and Ascend npu,
// and `npu-emulated`, which applies the npu rules on CPU compute so those paths are tested here.
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace roll::core {
struct CpuFeatures;
}

namespace roll::config {

enum class Platform { cpu, cuda, npu, npu_emulated };

struct PlatformRules {
  Platform platform;
  std::string name;            // cpu | cuda | npu | npu-emulated
  std::string device_key;      // ROLL's ray_device_key: CPU | GPU | NPU
  std::string visibility_var;  // "" on cpu
  std::string backend;         // gloo | nccl | hccl
  // May actor_infer share devices with actor_train or critic? (`reference` may always share.)
  bool colocation_allowed = true;
  std::vector<std::string> training_strategies;  // allowed for actor_train/critic/sft_train; empty = all
  bool restrict_attn_implementation = false;      // npu: fa2 | sdpa | auto only
  bool cast_int64_to_int32 = false;               // npu: int64 batch tensors travel as int32
  bool compute_on_cpu = true;                     // where the math runs in this build
  std::vector<std::pair<std::string, std::string>> default_env;  // docs/config.md, given to every worker
};

const PlatformRules& platform_rules(Platform p);
// "cpu", "cuda", "npu", "npu-emulated"; throws ConfigError naming the value otherwise.
Platform parse_platform(const std::string& name);
// ROLL_PLATFORM when set, else what this machine has (cuda when an NVIDIA device node exists).
Platform default_platform();

// Accelerators this node has, counted from their device nodes under `dev_dir` (/dev/nvidia<N>,
// /dev/davinci<N>); nullopt on cpu and npu-emulated, where a "device" is a slot of cores.
std::optional<int> detected_device_count(Platform p, const std::string& dev_dir = "/dev");

// The warning for a CPU worker asked for `dtype` that `cpu` has no instructions for (bf16 without
// AVX512-BF16 or AMX-BF16: ATen then widens every product in software); nullopt otherwise.
std::optional<std::string> cpu_dtype_warning(const std::string& dtype, const core::CpuFeatures& cpu);

// What `model_args.dtype: auto` (rollcpp's value, docs/compat.md) becomes: bf16 on accelerators and on
// CPUs with native bf16, fp32 on the others. Resolved once, by the process that loads the config.
std::string resolve_auto_dtype(bool compute_on_cpu, const core::CpuFeatures& cpu);

}  // namespace roll::config
