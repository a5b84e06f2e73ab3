// core::cpu_features() against the kernel's own reading of the same CPU: the "flags" line of
// /proc/cpuinfo (the kernel clears a feature there when the OS does not save its registers, as
// cpu_features() does through XCR0).
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "roll/core/cpu_features.h"

namespace {

std::set<std::string> proc_cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      std::set<std::string> out;
      for (std::string w; words >> w;) out.insert(w);
      return out;
    }
  return {};
}

}  // namespace

TEST(CoreCpuFeatures, AgreeWithTheKernelsFlags) {
  const auto flags = proc_cpuinfo_flags();
  if (flags.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  const roll::core::CpuFeatures& f = roll::core::cpu_features();
  EXPECT_EQ(f.avx2, flags.count("avx2") && flags.count("fma"));
  EXPECT_EQ(f.avx512f, flags.count("avx512f") == 1);
  EXPECT_EQ(f.avx512_bf16, flags.count("avx512_bf16") == 1);
  EXPECT_EQ(f.amx_bf16, flags.count("amx_bf16") == 1);
  EXPECT_EQ(f.native_bf16(), flags.count("avx512_bf16") || flags.count("amx_bf16"));
  EXPECT_FALSE(f.model.empty());
  EXPECT_NE(f.flags().find(f.avx2 ? "avx2" : "none"), std::string::npos) << f.flags();
}
