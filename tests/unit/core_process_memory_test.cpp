// core/process_memory: VmRSS and VmHWM from /proc, as the workers report them.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "roll/core/process_memory.h"

using namespace roll::core;

TEST(CoreProcessMemory, PeakFollowsTouchedPages) {
  const auto before = process_memory();
  ASSERT_TRUE(before);
  EXPECT_GT(before->rss_bytes, 0);
  EXPECT_GE(before->peak_rss_bytes, before->rss_bytes);
  constexpr size_t kBytes = size_t{96} << 20;
  {
    std::unique_ptr<char[]> block(new char[kBytes]);
    std::memset(block.get(), 1, kBytes);  // resident only once written
    const auto during = process_memory();
    ASSERT_TRUE(during);
    EXPECT_GE(during->rss_bytes, before->rss_bytes + static_cast<int64_t>(kBytes) * 9 / 10);
    EXPECT_GE(during->peak_rss_bytes, during->rss_bytes);
  }
  // The peak keeps the high-water mark after the block is freed.
  const auto after = process_memory();
  ASSERT_TRUE(after);
  EXPECT_GE(after->peak_rss_bytes, before->rss_bytes + static_cast<int64_t>(kBytes) * 9 / 10);
}

TEST(CoreProcessMemory, GoneProcessAndPhysicalMemory) {
  EXPECT_FALSE(process_memory(0x7ffffff0));  // no such pid
  EXPECT_GT(physical_memory_bytes(), int64_t{256} << 20);
}
