// Progress reporting: tqdm-style formatting of rate and ETA, and when each reporter prints, driven by a
// fake steady clock.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "roll/core/progress.h"

namespace roll {
namespace {

using namespace std::chrono_literals;

struct FakeClock {
  std::chrono::steady_clock::time_point now{};
  ProgressClock fn() {
    return [this] { return now; };
  }
};

TEST(CoreProgress, FormatDuration) {
  EXPECT_EQ(format_duration(0), "00:00");
  EXPECT_EQ(format_duration(7.9), "00:07");
  EXPECT_EQ(format_duration(65), "01:05");
  EXPECT_EQ(format_duration(3599), "59:59");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  EXPECT_EQ(format_duration(-1), "?");
  EXPECT_EQ(format_duration(1.0 / 0.0), "?");
}

TEST(CoreProgress, FormatRate) {
  EXPECT_EQ(format_rate(37, 12.0, "it"), "3.08it/s");
  EXPECT_EQ(format_rate(2, 5.0, "step"), "2.50s/step");  // below 1/s the inverse reads better
  EXPECT_EQ(format_rate(10, 10.0, "it"), "1.00it/s");
  EXPECT_EQ(format_rate(0, 3.0, "it"), "?it/s");
  EXPECT_EQ(format_rate(5, 0.0, "tok"), "?tok/s");
}

TEST(CoreProgress, FormatEtaAndCounts) {
  ProgressSnapshot s;
  s.task = "generate";
  s.done = 25;
  s.total = 100;
  s.elapsed_s = 10;
  EXPECT_EQ(format_eta(s), "00:30");
  EXPECT_EQ(format_progress_counts(s), "25/100 [00:10<00:30, 2.50it/s]");
  s.postfix = "reward=0.5";
  EXPECT_EQ(format_progress_counts(s), "25/100 [00:10<00:30, 2.50it/s, reward=0.5]");
  s.postfix.clear();
  s.done = 0;
  EXPECT_EQ(format_eta(s), "?");
  s.total = 0;  // unknown total
  s.done = 40;
  s.unit = "req";
  EXPECT_EQ(format_eta(s), "?");
  EXPECT_EQ(format_progress_counts(s), "40req [00:10, 4.00req/s]");
  s.total = 30;  // overshoot: no negative ETA
  EXPECT_EQ(format_eta(s), "00:00");
}

TEST(CoreProgress, LogReporterThrottlesByTime) {
  FakeClock clock;
  std::vector<std::string> lines;
  auto p = make_log_progress({[&](std::string_view s) { lines.emplace_back(s); }, clock.fn(), 5.0});
  p->start("rollout", 10, "ep");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "rollout: started, 10 ep");
  clock.now += 1s;
  p->advance(1);
  EXPECT_EQ(lines.size(), 1u);  // too soon
  clock.now += 4s;
  p->set_postfix("success=0.25");
  p->advance(1);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "rollout: 20% 2/10 [00:05<00:20, 2.50s/ep, success=0.25]");
  clock.now += 1s;
  p->advance(8);
  EXPECT_EQ(lines.size(), 2u);
  p->finish();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2], "rollout: 100% 10/10 [00:06<00:00, 1.67ep/s, success=0.25] done");
  p->advance(1);  // after finish: ignored
  p->finish();
  EXPECT_EQ(lines.size(), 3u);
}

TEST(CoreProgress, LogReporterEverySteps) {
  FakeClock clock;
  std::vector<std::string> lines;
  ProgressOptions o{[&](std::string_view s) { lines.emplace_back(s); }, clock.fn(), 1e9, 2};
  auto p = make_log_progress(o);
  p->start("train", 0);
  for (int i = 0; i < 5; ++i) {
    clock.now += 1s;
    p->advance();
  }
  ASSERT_EQ(lines.size(), 3u);  // start, after step 2, after step 4
  EXPECT_EQ(lines[1], "train: 2it [00:02, 1.00it/s]");
  EXPECT_EQ(lines[2], "train: 4it [00:04, 1.00it/s]");
}

TEST(CoreProgress, StepReporterLogsEveryStepWithRateAndEta) {
  // The pipeline loop's reporter: a line per step however close the steps are, no carriage return.
  FakeClock clock;
  std::vector<std::string> lines;
  auto p = make_step_progress({[&](std::string_view s) { lines.emplace_back(s); }, clock.fn()});
  p->start("pipeline", 4, "step");
  clock.now += 3s;
  p->set_postfix("critic/score/mean 0.25");
  p->advance();
  clock.now += 1s;
  p->advance();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "pipeline: started, 4 step");
  EXPECT_EQ(lines[1], "pipeline: 25% 1/4 [00:03<00:09, 3.00s/step, critic/score/mean 0.25]");
  EXPECT_EQ(lines[2], "pipeline: 50% 2/4 [00:04<00:04, 2.00s/step, critic/score/mean 0.25]");
  clock.now += 2s;
  p->advance(2);  // the last step: its line is finish()'s, not printed twice
  EXPECT_EQ(lines.size(), 3u);
  p->finish();
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[3], "pipeline: 100% 4/4 [00:06<00:00, 1.50s/step, critic/score/mean 0.25] done");
  for (const auto& l : lines) {
    EXPECT_EQ(l.find('\r'), std::string::npos) << l;
    EXPECT_EQ(l.find('\x1b'), std::string::npos) << l;
  }
}

TEST(CoreProgress, TerminalBarRedrawsInPlace) {
  FakeClock clock;
  std::vector<std::string> out;
  ProgressOptions o{[&](std::string_view s) { out.emplace_back(s); }, clock.fn(), 0.1, 0, 60};
  auto p = make_terminal_progress(o);
  p->start("step", 4);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].rfind("\rstep:   0%|", 0), 0u) << out[0];
  clock.now += 10ms;
  p->advance();
  EXPECT_EQ(out.size(), 1u);  // redraws are throttled
  clock.now += 990ms;
  p->advance();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].rfind("\rstep:  50%|", 0), 0u) << out[1];
  EXPECT_NE(out[1].find("| 2/4 [00:01<00:01, 2.00it/s]\x1b[K"), std::string::npos) << out[1];
  EXPECT_NE(out[1].find("█"), std::string::npos);
  clock.now += 1s;
  p->advance(2);  // the last step always draws
  ASSERT_EQ(out.size(), 3u);
  EXPECT_NE(out[2].find("100%|"), std::string::npos) << out[2];
  p->finish();
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out.back(), "\n");
}

TEST(CoreProgress, TerminalBarLeavesLineOnDestruction) {
  std::vector<std::string> out;
  {
    auto p = make_terminal_progress({[&](std::string_view s) { out.emplace_back(s); }, {}, 0.1, 0, 80});
    p->start("x", 0);
  }
  ASSERT_EQ(out.size(), 2u);
  EXPECT_NE(out[0].find("x: 0it [00:00, ?it/s]"), std::string::npos) << out[0];
  EXPECT_EQ(out[1], "\n");
}

TEST(CoreProgress, FactoryPicksByTty) {
  // Under ctest stderr is a pipe or file: the line log. Either way a reporter comes back.
  auto p = make_progress();
  ASSERT_NE(p, nullptr);
}

}  // namespace
}  // namespace roll
