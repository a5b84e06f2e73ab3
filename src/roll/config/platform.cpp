#include "roll/config/platform.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "roll/core/cpu_features.h"
#include "roll/core/error.h"

namespace roll::config {

const PlatformRules& platform_rules(Platform p) {
  static const std::vector<std::pair<std::string, std::string>> common = {
      {"TORCH_EXTENSIONS_DIR", ""},
  };
  static const PlatformRules cpu{Platform::cpu, "cpu", "CPU", "", "gloo", true, {}, false, false, true, common};
  static const PlatformRules cuda{Platform::cuda, "cuda", "GPU", "CUDA_VISIBLE_DEVICES", "nccl", true, {}, false,
                                  false, false,
                                  [] {
                                    auto env = common;
                                    env.push_back({"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"});
                                    env.push_back({"NCCL_CUMEM_ENABLE", "0"});
                                    env.push_back({"NCCL_NVLS_ENABLE", "0"});
                                    return env;
                                  }()};
  static const std::vector<std::string> npu_training{"deepspeed_train", "fsdp2_train"};
  static const PlatformRules npu{Platform::npu, "npu", "NPU", "ASCEND_RT_VISIBLE_DEVICES", "hccl", false,
                                 npu_training, true, true, false, common};
  static const PlatformRules npu_emulated{Platform::npu_emulated, "npu-emulated", "NPU", "ASCEND_RT_VISIBLE_DEVICES",
                                          "hccl", false, npu_training, true, true, true, common};
  switch (p) {
    case Platform::cpu: return cpu;
    case Platform::cuda: return cuda;
    case Platform::npu: return npu;
    case Platform::npu_emulated: return npu_emulated;
  }
  return cpu;
}

Platform parse_platform(const std::string& name) {
  if (name == "cpu") return Platform::cpu;
  if (name == "cuda" || name == "gpu") return Platform::cuda;
  if (name == "npu") return Platform::npu;
  if (name == "npu-emulated" || name == "npu_emulated") return Platform::npu_emulated;
  throw ConfigError("platform", fmt::format("unknown platform '{}' (expected cpu, cuda, npu or npu-emulated)", name));
}

Platform default_platform() {
  if (const char* env = std::getenv("ROLL_PLATFORM"); env && *env) return parse_platform(env);
  if (std::filesystem::exists("/dev/nvidia0")) return Platform::cuda;
  if (std::filesystem::exists("/dev/davinci0")) return Platform::npu;
  return Platform::cpu;
}

std::optional<int> detected_device_count(Platform p, const std::string& dev_dir) {
  std::string prefix;
  if (p == Platform::cuda) prefix = "nvidia";
  else if (p == Platform::npu) prefix = "davinci";
  else return std::nullopt;
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dev_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
        name.find_first_not_of("0123456789", prefix.size()) == std::string::npos)
      ++n;
  }
  return n;
}

std::string resolve_auto_dtype(bool compute_on_cpu, const core::CpuFeatures& cpu) {
  // bf16 where it is the fast one: accelerators, and CPUs with bf16 products in hardware (on a Zen 4
  // torch.mm 1024x896x4864 runs 312 GFLOP/s in bf16 against 181 in fp32; without them bf16 is ~30x
  // slower than fp32).
  return !compute_on_cpu || cpu.native_bf16() ? "bf16" : "fp32";
}

std::optional<std::string> cpu_dtype_warning(const std::string& dtype, const core::CpuFeatures& cpu) {
  if (dtype != "bf16" || cpu.native_bf16()) return std::nullopt;
  // Figures: torch.mm 1024x896x4864 on 2 threads of an AVX2-only Zen 3 (bf16 4.4, fp32 121 GFLOP/s).
  return fmt::format("bf16 on this CPU ({}; has {}) runs without native bf16 instructions (avx512_bf16 and "
                     "amx_bf16 are missing): ATen's bf16 matrix products run in software at ~4-5 GFLOP/s against "
                     "~120-180 for fp32 on such CPUs, so training and log-probs are ~25-40x slower; use dtype fp32 "
                     "on this machine",
                     cpu.model.empty() ? "model unknown" : cpu.model, cpu.flags());
}

}  // namespace roll::config
