// core/cpu_block_cache: ATen's CPU allocator reuses large freed blocks, within its limit.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include "roll/core/cpu_block_cache.h"
#include "roll/core/error.h"

using namespace roll::core;

namespace {

constexpr int64_t kLimit = int64_t{64} << 20;
constexpr int64_t kFloats4MiB = (int64_t{4} << 20) / 4;

at::Tensor floats(int64_t n) { return at::empty({n}, at::TensorOptions().dtype(at::kFloat)); }

}  // namespace

TEST(CoreCpuBlockCache, LargeBlocksAreReusedAndSmallOnesAreNot) {
  install_cpu_block_cache(kLimit);
  release_cpu_block_cache();
  const CpuBlockCacheStats start = cpu_block_cache_stats();
  const void* first = nullptr;
  {
    at::Tensor t = floats(kFloats4MiB);
    t.fill_(3.0f);
    first = t.data_ptr();
  }
  EXPECT_EQ(cpu_block_cache_stats().cached_bytes, int64_t{4} << 20);
  {
    // A little smaller (the last chunk of a sequence) still takes the cached block.
    at::Tensor t = floats(kFloats4MiB - kFloats4MiB / 8);
    EXPECT_EQ(t.data_ptr(), first);
    t.fill_(1.0f);
    EXPECT_EQ(t.sum().item<double>(), static_cast<double>(t.numel()));
    EXPECT_EQ(cpu_block_cache_stats().cached_bytes, 0);
  }
  {
    at::Tensor small = floats(1024);  // below kMinCachedBytes: ATen's default allocator
    small.zero_();
  }
  const CpuBlockCacheStats end = cpu_block_cache_stats();
  EXPECT_EQ(end.hits - start.hits, 1);
  EXPECT_EQ(end.misses - start.misses, 1);
  EXPECT_EQ(end.live_bytes, start.live_bytes);
  release_cpu_block_cache();
  EXPECT_EQ(cpu_block_cache_stats().cached_bytes, 0);
}

TEST(CoreCpuBlockCache, ABlockMuchLargerThanTheRequestIsLeftForItsOwnSize) {
  install_cpu_block_cache(kLimit);
  release_cpu_block_cache();
  const void* big = nullptr;
  {
    at::Tensor t = floats(4 * kFloats4MiB);
    big = t.data_ptr();
  }
  at::Tensor t = floats(kFloats4MiB);
  EXPECT_NE(t.data_ptr(), big);
  EXPECT_EQ(cpu_block_cache_stats().cached_bytes, int64_t{16} << 20);
  release_cpu_block_cache();
}

TEST(CoreCpuBlockCache, CachedBytesStayWithinTheLimitOldestFirst) {
  install_cpu_block_cache(kLimit);
  release_cpu_block_cache();
  {
    std::vector<at::Tensor> held;
    for (int i = 0; i < 24; ++i) held.push_back(floats(kFloats4MiB * (1 + i % 3)));  // 192 MiB
  }
  const CpuBlockCacheStats s = cpu_block_cache_stats();
  EXPECT_LE(s.cached_bytes, kLimit);
  EXPECT_GT(s.cached_bytes, kLimit / 2);  // the newest frees stay
  EXPECT_EQ(s.limit_bytes, kLimit);
  release_cpu_block_cache();
}

TEST(CoreCpuBlockCache, TheLimitComesFromTheEnvironmentAndABadValueNamesIt) {
  setenv("ROLL_CPU_BLOCK_CACHE_MB", "512", 1);
  EXPECT_EQ(cpu_block_cache_limit_from_env(), int64_t{512} << 20);
  setenv("ROLL_CPU_BLOCK_CACHE_MB", "0", 1);
  EXPECT_EQ(cpu_block_cache_limit_from_env(), 0);
  setenv("ROLL_CPU_BLOCK_CACHE_MB", "lots", 1);
  try {
    cpu_block_cache_limit_from_env();
    FAIL() << "a malformed limit was accepted";
  } catch (const roll::Error& e) {
    EXPECT_NE(std::string(e.what()).find("ROLL_CPU_BLOCK_CACHE_MB"), std::string::npos);
  }
  unsetenv("ROLL_CPU_BLOCK_CACHE_MB");
  EXPECT_GT(cpu_block_cache_limit_from_env(), 0);
}

TEST(CoreCpuBlockCache, ALimitOfZeroAfterInstallingKeepsNothing) {
  install_cpu_block_cache(kLimit);
  install_cpu_block_cache(0);
  { at::Tensor t = floats(kFloats4MiB); }
  EXPECT_EQ(cpu_block_cache_stats().cached_bytes, 0);
  EXPECT_EQ(cpu_block_cache_stats().limit_bytes, 0);
  install_cpu_block_cache(kLimit);
  { at::Tensor t = floats(kFloats4MiB); }
  EXPECT_EQ(cpu_block_cache_stats().cached_bytes, int64_t{4} << 20);
  release_cpu_block_cache();
}
