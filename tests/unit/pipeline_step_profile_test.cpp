// The step profile: the busy clock's union of intervals, the phase sums and the step log line.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "roll/core/busy_clock.h"
#include "roll/pipeline/step_profile.h"

namespace roll::pipeline {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

TEST(PipelineStepProfile, BusyClockCountsOverlappingScopesOnce) {
  const double before = busy_seconds();
  const auto t0 = Clock::now();
  {
    BusyScope outer;
    std::thread other([] {
      BusyScope inner;  // overlaps `outer` on another thread
      std::this_thread::sleep_for(100ms);
    });
    std::this_thread::sleep_for(100ms);
    other.join();
  }
  const double wall = since(t0);
  const double busy = busy_seconds() - before;
  // Two threads busy through the same ~100 ms: counted once, so at most the wall time that passed
  // (two separate counts would be >= 200 ms).
  EXPECT_GE(busy, 0.1);
  EXPECT_LE(busy, wall);
  // Nothing open: the clock stands still.
  const double idle_from = busy_seconds();
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(busy_seconds(), idle_from);
  // Sequential scopes add up, and an open scope counts while it runs.
  {
    BusyScope a;
    std::this_thread::sleep_for(30ms);
    EXPECT_GE(busy_seconds() - idle_from, 0.03);
  }
  { BusyScope b; std::this_thread::sleep_for(30ms); }
  EXPECT_GE(busy_seconds() - idle_from, 0.06);
}

TEST(PipelineStepProfile, OverheadIsWallTimeInNoPhase) {
  std::map<std::string, double> m = {
      {"time/step_model_update", 0.1}, {"time/step_rollout", 1.0},   {"time/old_log_probs_values", 0.4},
      {"time/compute_advantage", 0.05}, {"time/step_train", 1.2},    {"time/step_total", 9.0},  // previous step's
      {"time/actor_train/do_checkpoint/total", 0.3}, {"time/critic/do_checkpoint/total", 0.2},
      {"time/actor_train/model_update/total", 0.1},  // the same time as step_model_update, not a phase
  };
  const auto by_phase = add_step_times(m, 3.5);
  // The clusters save concurrently: the slowest save is the checkpoint phase.
  EXPECT_DOUBLE_EQ(m.at("time/step_checkpoint"), 0.3);
  EXPECT_DOUBLE_EQ(m.at("time/step_wall"), 3.5);
  EXPECT_NEAR(m.at("time/step_overhead"), 3.5 - (0.1 + 1.0 + 0.4 + 0.05 + 1.2 + 0.3), 1e-12);
  EXPECT_DOUBLE_EQ(by_phase.at("rollout"), 1.0);
  EXPECT_DOUBLE_EQ(by_phase.at("log_probs"), 0.4);
  EXPECT_EQ(by_phase.count("generate"), 0u);
  // A wall time below the phases' sum (timers of overlapping work) never reports negative overhead.
  std::map<std::string, double> fast = {{"time/step_train", 2.0}};
  add_step_times(fast, 1.5);
  EXPECT_EQ(fast.at("time/step_overhead"), 0.0);
}

TEST(PipelineStepProfile, TheStepLineNamesPhasesSharesAndBusyClusters) {
  std::map<std::string, double> m = {{"time/step_generate", 0.65}, {"time/ref_log_probs_values", 0.41},
                                     {"time/step_train", 1.18},    {"time/step_model_update", 0.001},
                                     {"system/busy/actor_train", 0.55}, {"system/busy/actor_infer", 0.31}};
  add_step_times(m, 2.3);
  EXPECT_EQ(format_step_profile(m),
            "2.30 s: generate 0.65 (28%), log_probs 0.41 (18%), train 1.18 (51%), overhead 0.06 (3%); "
            "busy actor_infer 31%, actor_train 55%");
  EXPECT_EQ(format_step_profile({}), "");
}

}  // namespace
}  // namespace roll::pipeline
