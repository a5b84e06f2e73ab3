#pragma once
// What this CPU can run natively, read once from cpuid (and the OS's saved-state mask), so that
// kernels and config checks ask the same question.
#include <string>

namespace roll::core {

struct CpuFeatures {
  std::string model;        // the brand string, e.g. "AMD EPYC 7763 64-Core Processor"
  bool avx2 = false;        // with FMA
  bool avx512f = false;
  bool avx512_bf16 = false; // vdpbf16ps
  bool amx_bf16 = false;
  // bf16 products in hardware (AVX512-BF16 or AMX-BF16); without them ATen widens bf16 in software.
  bool native_bf16() const { return avx512_bf16 || amx_bf16; }
  std::string flags() const;  // "avx2 avx512f avx512_bf16", the names /proc/cpuinfo uses
};

const CpuFeatures& cpu_features();

}  // namespace roll::core
