// Every thread's stack of this process, named from the binary's symbols and -g1 line tables:
// a thread parked in a named function shows that function, this file and a line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "roll/core/thread_stacks.h"

namespace roll::core {
namespace {

std::mutex g_mu;
std::condition_variable g_cv;
bool g_release = false;
std::atomic<bool> g_parked{false};

// noinline: the frame must exist under this name.
__attribute__((noinline)) void parked_in_thread_stacks_test() {
  std::unique_lock<std::mutex> lk(g_mu);
  g_parked = true;
  g_cv.wait(lk, [] { return g_release; });
  asm volatile("" ::: "memory");  // keeps the frame from becoming a tail call
}

TEST(CoreThreadStacks, NamesTheFunctionAndSourceLineAThreadIsParkedIn) {
  std::thread t(parked_in_thread_stacks_test);
  while (!g_parked) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto stacks = capture_thread_stacks();
  {
    std::lock_guard<std::mutex> g(g_mu);
    g_release = true;
  }
  g_cv.notify_all();
  t.join();

  ASSERT_GE(stacks.size(), 2u);
  bool found = false;
  for (const auto& s : stacks) {
    EXPECT_TRUE(s.answered) << "thread " << s.tid << " " << s.name;
    EXPECT_FALSE(s.state.empty());
    for (const auto& f : s.frames)
      if (!f.inlined && f.function.find("parked_in_thread_stacks_test()") != std::string::npos &&
          f.function.find("lambda") == std::string::npos) {
        found = true;
        EXPECT_NE(f.file.find("core_thread_stacks_test.cpp"), std::string::npos) << f.file << "\n"
                                                                              << format_thread_stacks(stacks);
        EXPECT_GT(f.line, 20);
        EXPECT_LT(f.line, 32);  // inside the function's body above (the inlined wait is a frame of its own)
        EXPECT_EQ(s.state.substr(0, 1), "S") << "a thread waiting on a condition sleeps";
      }
  }
  EXPECT_TRUE(found) << format_thread_stacks(stacks);
  // The condition variable's wait, inlined into it, is a frame of its own with its header's line.
  bool inlined_wait = false;
  for (const auto& s : stacks)
    for (size_t i = 0; i + 1 < s.frames.size(); ++i)
      if (s.frames[i].inlined && s.frames[i + 1].function.find("parked_in_thread_stacks_test()") != std::string::npos)
        inlined_wait = s.frames[i].file.find("condition_variable") != std::string::npos && s.frames[i].pc == s.frames[i + 1].pc;
  EXPECT_TRUE(inlined_wait) << format_thread_stacks(stacks);
  // The capturing thread is among them, and the text and JSON carry the same frames.
  const std::string text = format_thread_stacks(stacks);
  EXPECT_NE(text.find("parked_in_thread_stacks_test"), std::string::npos);
  EXPECT_NE(text.find("CoreThreadStacks_NamesTheFunction"), std::string::npos) << text;
  const auto j = thread_stacks_json(stacks);
  ASSERT_EQ(j.size(), stacks.size());
  EXPECT_EQ(j[0]["frames"].size(), stacks[0].frames.size());
}

TEST(CoreThreadStacks, ProcessStateReadsProc) {
  EXPECT_EQ(process_state(getpid()).substr(0, 1), "R");  // this thread runs while it reads
  EXPECT_EQ(process_state(999999999), "");
}

TEST(CoreThreadStacks, SleepsAndWaitsResumeAfterTheSignal) {
  // SA_RESTART and libstdc++'s EINTR loops: a sleeping thread sleeps its whole time.
  const auto t0 = std::chrono::steady_clock::now();
  std::thread t([] { std::this_thread::sleep_for(std::chrono::milliseconds(300)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  capture_thread_stacks();
  capture_thread_stacks();
  t.join();
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(300));
}

}  // namespace
}  // namespace roll::core
