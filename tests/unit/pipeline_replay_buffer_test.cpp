// ROLL's ReplayBuffer invariants (its test_generate_scheduler.py as behaviour, docs/pipelines.md
// "Asynchronous generation"), on a simulated generator that finishes prompts in a random order
// and drops some in the query filter: every step gets exactly B prompts; synchronously all of
// them start in the step; with ratio k they start in [step - ceil(k), step]; the first async
// step runs ceil(B * k) prompts ahead; gc drops the groups too old for the next step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "roll/core/error.h"
#include "roll/pipeline/rollout/replay_buffer.h"

namespace roll::pipeline {
namespace {

constexpr int64_t kB = 4, kN = 2;

struct StepResult {
  std::vector<ReplayTaken> taken;
  int64_t dropped = 0;  // by the simulated query filter
};

// One step as the pipeline drives it: (async: pause = gc) advance, start prompts as the budget allows
// and finish running ones in a random order (one in `drop_every` dropped) until the batch is ready,
// then (sync) gc.
class Sim {
 public:
  Sim(double ratio, int64_t drop_every = 0, bool additional = false)
      : ratio_(ratio), drop_every_(drop_every), buffer_({ratio, additional, additional ? 3 : 0}) {}

  StepResult step(int64_t s) {
    StepResult r;
    if (ratio_ > 0 && buffer_.started()) forget(buffer_.gc());
    buffer_.advance_step(s, kB);
    for (int guard = 0; guard < 10000; ++guard) {
      while (auto id = buffer_.poll()) running_.push_back(*id);
      if (auto t = buffer_.take_batch(kB, kN)) {
        r.taken = std::move(*t);
        break;
      }
      if (running_.empty()) ADD_FAILURE() << "nothing runs and the batch is not ready at step " << s;
      std::uniform_int_distribution<size_t> pick(0, running_.size() - 1);
      const size_t i = pick(rng_);
      const int64_t id = running_[i];
      running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
      if (drop_every_ > 0 && ++finished_ % drop_every_ == 0) {
        buffer_.abort(id);
        ++r.dropped;
      } else {
        buffer_.commit(id);
      }
    }
    if (ratio_ == 0) forget(buffer_.gc());
    return r;
  }

  void forget(const std::vector<int64_t>& aborted) {
    for (int64_t id : aborted) std::erase(running_, id);
  }

  ReplayBuffer& buffer() { return buffer_; }
  std::vector<int64_t>& running() { return running_; }

 private:
  double ratio_;
  int64_t drop_every_;
  ReplayBuffer buffer_;
  std::vector<int64_t> running_;
  int64_t finished_ = 0;
  std::mt19937 rng_{7};
};

TEST(PipelineReplayBuffer, SyncStepsTakeExactlyTheirOwnPrompts) {
  Sim sim(0);
  for (int64_t s = 0; s < 10; ++s) {
    StepResult r = sim.step(s);
    ASSERT_EQ(static_cast<int64_t>(r.taken.size()), kB) << "step " << s;
    for (const auto& t : r.taken) {
      EXPECT_EQ(t.start_step, s);
      EXPECT_GE(t.prompt_id, kB * s);
      EXPECT_LT(t.prompt_id, kB * s + kB) << "no prompt beyond the step's budget starts";
    }
    EXPECT_EQ(sim.buffer().groups(), 0) << "sync gc drops everything not taken";
  }
}

TEST(PipelineReplayBuffer, FilteredPromptsAreReplaced) {
  Sim sim(0, 3);
  int64_t dropped = 0;
  std::set<int64_t> seen;
  for (int64_t s = 0; s < 10; ++s) {
    StepResult r = sim.step(s);
    ASSERT_EQ(static_cast<int64_t>(r.taken.size()), kB);
    dropped += r.dropped;
    for (const auto& t : r.taken) {
      EXPECT_EQ(t.start_step, s);
      EXPECT_TRUE(seen.insert(t.prompt_id).second) << "a prompt is taken once";
    }
  }
  EXPECT_GT(dropped, 5);
  EXPECT_GE(sim.buffer().used_prompts(), 10 * kB + dropped) << "every dropped prompt was replaced";
}

class PipelineReplayBufferAsync : public ::testing::TestWithParam<double> {};

TEST_P(PipelineReplayBufferAsync, PromptsStartAtMostCeilRatioStepsEarly) {
  const double k = GetParam();
  const auto ahead = static_cast<int64_t>(std::ceil(k));
  Sim sim(k, 5);
  std::set<int64_t> seen;
  bool some_off_policy = false;
  for (int64_t s = 0; s < 10; ++s) {
    StepResult r = sim.step(s);
    ASSERT_EQ(static_cast<int64_t>(r.taken.size()), kB) << "step " << s;
    for (const auto& t : r.taken) {
      EXPECT_GE(t.start_step, std::max<int64_t>(0, s - ahead)) << "ratio " << k << " step " << s;
      EXPECT_LE(t.start_step, s);
      some_off_policy = some_off_policy || t.start_step < s;
      EXPECT_TRUE(seen.insert(t.prompt_id).second);
    }
    EXPECT_TRUE(std::is_sorted(r.taken.begin(), r.taken.end(),
                               [](const auto& a, const auto& b) { return a.start_step < b.start_step; }))
        << "oldest first";
  }
  EXPECT_TRUE(some_off_policy) << "with ratio " << k << " later steps use prompts started earlier";
}

INSTANTIATE_TEST_SUITE_P(Ratios, PipelineReplayBufferAsync, ::testing::Values(1.0, 2.5, 3.0));

TEST(PipelineReplayBuffer, TheFirstAsyncStepRunsCeilBTimesRatioAhead) {
  ReplayBuffer b({1.5, false, 0});
  EXPECT_FALSE(b.poll()) << "nothing starts before the first step";
  b.advance_step(0, kB);
  int64_t started = 0;
  while (b.poll()) ++started;
  EXPECT_EQ(started, kB + 6) << "B + ceil(B * 1.5)";
  b.advance_step(1, kB);
  while (b.poll()) ++started;
  EXPECT_EQ(started, 2 * kB + 6) << "each later step admits B more";
}

TEST(PipelineReplayBuffer, AFractionalRatioTakesOnlyItsShareFromTheOldestGroup) {
  // ratio 1.5 with B = 4, n = 2: the min_step group gives int(4 * 2 * 0.5) = 4 samples = 2 prompts.
  ReplayBuffer b({1.5, false, 0});
  b.advance_step(0, kB);
  std::vector<int64_t> ids;
  while (auto id = b.poll()) ids.push_back(*id);
  ASSERT_EQ(ids.size(), 10u);
  for (int64_t id : ids) b.commit(id);
  auto first = b.take_batch(kB, kN);
  ASSERT_TRUE(first);
  b.gc();  // ceil(1.5) = 2: nothing is old enough yet
  b.advance_step(1, kB);
  b.gc();
  b.advance_step(2, kB);
  std::vector<int64_t> now;
  while (auto id = b.poll()) now.push_back(*id);
  EXPECT_EQ(now.size(), 2u * kB) << "steps 1 and 2 each admitted B (step 1 drew none)";
  EXPECT_FALSE(b.take_batch(kB, kN)) << "step 2's own prompts are still running";
  for (int64_t id : now) b.commit(id);
  auto t = b.take_batch(kB, kN);
  ASSERT_TRUE(t);
  int64_t from_min_step = 0;
  for (const auto& x : *t) from_min_step += x.start_step == 0;
  EXPECT_EQ(from_min_step, 2) << "the share of the min_step group";
}

TEST(PipelineReplayBuffer, GcDropsTooOldGroupsAndReturnsTheirRunningPrompts) {
  ReplayBuffer b({1.0, false, 0});
  b.advance_step(0, kB);
  std::vector<int64_t> ids;
  while (auto id = b.poll()) ids.push_back(*id);
  ASSERT_EQ(ids.size(), 2u * kB);
  b.commit(ids[0]);
  EXPECT_TRUE(b.gc().empty()) << "step 0 is still usable at step 1";
  b.advance_step(1, kB);
  EXPECT_EQ(b.start_step_of(ids[0]), 0);
  auto aborted = b.gc();  // current 1, ratio 1: groups <= 0 go
  EXPECT_EQ(aborted.size(), ids.size() - 1);
  EXPECT_FALSE(b.start_step_of(ids[0])) << "finished but never taken: dropped with its group";
  EXPECT_EQ(b.running(), 0);
  b.abort(ids[1]);  // a late abort of a dropped prompt is harmless
  int64_t refill = 0;
  while (b.poll()) ++refill;
  // The aborted prompts' slots refill; the finished one dropped unused stays counted as completed (ROLL's).
  EXPECT_EQ(refill, 3 * kB - 1);
}

TEST(PipelineReplayBuffer, AdditionalPromptsRunBeyondTheBudgetWithinTheirLimit) {
  ReplayBuffer b({1.0, true, 3});
  b.advance_step(0, kB);
  int64_t started = 0;
  while (b.poll()) ++started;
  EXPECT_EQ(started, 2 * kB + 3);
  EXPECT_THROW(b.commit(9999), Error);
  EXPECT_THROW(b.advance_step(0, kB), Error) << "steps must increase";
}

}  // namespace
}  // namespace roll::pipeline
