#include "roll/core/cpu_features.h"

#include <cpuid.h>

#include <cstdint>
#include <cstring>

namespace roll::core {
namespace {

struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(unsigned leaf, unsigned sub) {
  Regs r;
  __cpuid_count(leaf, sub, r.a, r.b, r.c, r.d);
  return r;
}

bool bit(unsigned reg, int n) { return (reg >> n) & 1u; }

// XCR0: which register states the OS saves on a context switch; a feature it does not save is off.
uint64_t xcr0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

CpuFeatures detect() {
  CpuFeatures f;
  const unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf < 7) return f;
  const Regs l1 = cpuid(1, 0), l7 = cpuid(7, 0), l7s1 = cpuid(7, 1);
  const bool osxsave = bit(l1.c, 27);
  const uint64_t xcr = osxsave ? xcr0() : 0;
  const bool ymm = (xcr & 0x6) == 0x6, zmm = (xcr & 0xe6) == 0xe6, tiles = (xcr & 0x60000) == 0x60000;
  f.avx2 = ymm && bit(l1.c, 28) && bit(l1.c, 12) && bit(l7.b, 5);
  f.avx512f = zmm && bit(l7.b, 16);
  f.avx512_bf16 = f.avx512f && bit(l7s1.a, 5);
  f.amx_bf16 = tiles && bit(l7.d, 22);
  if (__get_cpuid_max(0x80000000u, nullptr) >= 0x80000004u) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      const Regs r = cpuid(0x80000002u + i, 0);
      std::memcpy(brand + 16 * i, &r, 16);
    }
    f.model = brand;
    const size_t first = f.model.find_first_not_of(' '), last = f.model.find_last_not_of(' ');
    f.model = first == std::string::npos ? "" : f.model.substr(first, last - first + 1);
  }
  return f;
}

}  // namespace

std::string CpuFeatures::flags() const {
  std::string out;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!out.empty()) out += ' ';
    out += name;
  };
  add(avx2, "avx2");
  add(avx512f, "avx512f");
  add(avx512_bf16, "avx512_bf16");
  add(amx_bf16, "amx_bf16");
  return out.empty() ? "none of avx2/avx512f/avx512_bf16/amx_bf16" : out;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

}  // namespace roll::core
