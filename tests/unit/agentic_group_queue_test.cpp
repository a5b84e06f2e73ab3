// GroupQueueManager invariants of ROLL's test_rollout_scheduler (tests/), with real env threads.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "roll/agentic/group_queue.h"
#include "roll/core/error.h"

#include <map>

using namespace roll;
using namespace roll::agentic;

namespace {

// Env threads: each plays episodes of its group until the queue says stop.
struct EnvFleet {
  GroupQueueManager& q;
  std::vector<std::thread> threads;
  std::atomic<int64_t> puts{0};
  EnvFleet(GroupQueueManager& queue, int64_t groups, int64_t envs_per_group) : q(queue) {
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t e = 0; e < envs_per_group; ++e)
        threads.emplace_back([this, g, e, envs_per_group] {
          const int64_t env_id = g * envs_per_group + e;
          while (auto ep = q.get_episode(g, env_id)) {
            if ((env_id + ep->episode_id) % 5 == 0) std::this_thread::yield();  // uneven speeds
            q.put(Rollout{g, ep->episode_id, env_id, ep->start_step, nullptr});
            ++puts;
          }
          q.env_exit(g, env_id);
        });
  }
  ~EnvFleet() {
    q.shutdown();
    for (auto& t : threads) t.join();
  }
};

}  // namespace

TEST(AgenticGroupQueue, BatchSizesAndAsyncRatios) {
  const int64_t groups = 2, group_size = 8, redundancy = 4;
  for (int64_t batch : {8, 16, 32, 64})
    for (int64_t ratio : {0, 1, 2, 7}) {
      GroupQueueOptions o;
      o.num_groups = groups;
      o.group_size = group_size;
      o.group_size_redundancy = redundancy;
      o.episodes_per_step = (batch + groups * group_size - 1) / (groups * group_size);
      o.async_generation_ratio = ratio;
      GroupQueueManager q(o);
      EnvFleet fleet(q, groups, group_size + redundancy);
      for (int64_t step = 0; step < 10; ++step) {
        q.advance_step(step);
        auto got = q.get_batch(batch, step, 30.0);
        ASSERT_TRUE(got.has_value()) << "timeout: batch " << batch << " ratio " << ratio << " step " << step;
        EXPECT_EQ(static_cast<int64_t>(got->size()), batch) << "batch " << batch << " ratio " << ratio;
        for (const auto& r : *got)
          ASSERT_EQ(r.start_step, std::max<int64_t>(0, step - ratio))
              << "batch " << batch << " ratio " << ratio << " step " << step;
        // Whole groups: each (group, episode) appears exactly group_size times.
        std::map<std::pair<int64_t, int64_t>, int> per_episode;
        for (const auto& r : *got) ++per_episode[{r.group_id, r.episode_id}];
        for (const auto& [k, n] : per_episode) EXPECT_EQ(n, group_size);
      }
    }
}

TEST(AgenticGroupQueue, GroupFilterStillYieldsFullBatches) {
  GroupQueueOptions o;
  o.num_groups = 2;
  o.group_size = 8;
  o.group_size_redundancy = 4;
  o.episodes_per_step = 2;
  o.group_filter = [](int64_t, int64_t episode_id, const std::vector<Rollout>&) { return episode_id % 3 == 0; };
  GroupQueueManager q(o);
  EnvFleet fleet(q, 2, 12);
  for (int64_t step = 0; step < 6; ++step) {
    q.advance_step(step);
    auto got = q.get_batch(32, step, 30.0);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->size(), 32u);
    for (const auto& r : *got) EXPECT_NE(r.episode_id % 3, 0);
  }
  EXPECT_GT(q.group_filter_count(), 0);
}

TEST(AgenticGroupQueue, NegativeBatchSizeDrainsTheWholeDataset) {
  GroupQueueOptions o;
  o.num_groups = 3;
  o.group_size = 2;
  o.group_size_redundancy = 1;
  o.episodes_per_step = 4;
  o.max_episodes_per_group = 4;  // finite validation set: 3 groups x 4 episodes
  GroupQueueManager q(o);
  EnvFleet fleet(q, 3, 3);
  q.advance_step(0);
  auto got = q.get_batch(-1, 0, 30.0);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->size(), 3u * 4u * 2u);
}

TEST(AgenticGroupQueue, StaleAndRedundantRolloutsAreIgnored) {
  GroupQueueOptions o;
  o.num_groups = 1;
  o.group_size = 2;
  o.group_size_redundancy = 1;
  GroupQueueManager q(o);
  q.advance_step(0);
  auto a = q.get_episode(0, 0), b = q.get_episode(0, 1), c = q.get_episode(0, 2);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->episode_id, b->episode_id);
  EXPECT_EQ(b->episode_id, c->episode_id);  // redundancy: 3 envs play the same episode
  q.put(Rollout{0, a->episode_id, 0, 0, nullptr});
  q.put(Rollout{0, a->episode_id, 1, 0, nullptr});
  q.put(Rollout{0, a->episode_id, 2, 0, nullptr});  // the redundant third arrives late: discarded
  auto got = q.get_batch(2, 0, 1.0);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->size(), 2u);
  q.advance_step(1);
  q.put(Rollout{0, 12345, 0, 0, nullptr});  // unknown / dropped episode: ignored
  EXPECT_FALSE(q.get_batch(2, 1, 0.05).has_value());  // nothing complete for step 1 yet: timeout
  EXPECT_THROW(q.get_episode(5, 0), Error);
}

// A worker of the run died: no rollout will come, so the driver's wait ends within a poll of the
// failure probe (not at rpc_timeout), with the probe's reason in the error.
TEST(AgenticGroupQueue, AWaitForABatchEndsWhenTheFailureProbeNamesAFailure) {
  GroupQueueOptions o;
  o.num_groups = 1;
  o.group_size = 2;
  GroupQueueManager q(o);
  q.advance_step(0);
  std::atomic<bool> dead{false};
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    dead = true;
  });
  const auto t0 = std::chrono::steady_clock::now();
  try {
    q.get_batch(2, 0, 60.0, [&]() -> std::optional<std::string> {
      if (dead) return std::string("worker train_env rank 0 was killed by signal 9");
      return std::nullopt;
    });
    ADD_FAILURE() << "get_batch returned although no rollout was put";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train_env rank 0 was killed"), std::string::npos) << e.what();
  }
  killer.join();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(waited, 10.0) << "the wait ran on toward rpc_timeout";
  // Without a failure, the probe does not end the wait early: a plain timeout answers nullopt.
  EXPECT_FALSE(q.get_batch(2, 0, 0.5, [] { return std::optional<std::string>(); }).has_value());
}

// The callback form a service uses: answered at once when an episode is open, else later by the
// thread that creates one, ends the queue or reports the env gone; never while the queue is locked.
TEST(AgenticGroupQueue, AsyncAsksAreAnsweredWhenEpisodesAppear) {
  GroupQueueOptions o;
  o.num_groups = 2;
  o.group_size = 1;
  o.group_size_redundancy = 1;
  GroupQueueManager q(o);
  std::vector<std::pair<int64_t, std::optional<GroupQueueManager::Episode>>> answers;  // (env, answer)
  auto ask = [&](int64_t group, int64_t env) {
    q.get_episode_async(group, env, [&answers, &q, env](std::optional<GroupQueueManager::Episode> ep) {
      // A callback under the queue's lock would deadlock here.
      (void)q.group_filter_count();
      answers.emplace_back(env, ep);
    });
  };
  ask(0, 0);
  ask(0, 1);
  ask(1, 2);
  ask(0, 5);  // a third env for a group of width 2: waits beyond this step
  EXPECT_TRUE(answers.empty());  // no step yet: every ask waits
  q.advance_step(0);
  ASSERT_EQ(answers.size(), 3u);  // arrival order within a group; group 0 first
  EXPECT_EQ(answers[0].first, 0);
  EXPECT_EQ(answers[1].first, 1);
  EXPECT_EQ(answers[2].first, 2);
  for (const auto& [env, ep] : answers) {
    ASSERT_TRUE(ep.has_value());
    EXPECT_EQ(ep->episode_id, 0);
    EXPECT_EQ(ep->start_step, 0);
  }
  // env 5 leaves while waiting: its ask is answered with nothing and it takes no episode.
  q.env_exit(0, 5);
  ASSERT_EQ(answers.size(), 4u);
  EXPECT_EQ(answers[3].first, 5);
  EXPECT_FALSE(answers[3].second.has_value());
  // An open episode answers at once (group 1 still has a slot).
  ask(1, 3);
  ASSERT_EQ(answers.size(), 5u);
  ASSERT_TRUE(answers[4].second.has_value());
  EXPECT_EQ(answers[4].second->episode_id, 0);
  // Step 1's episode goes to a waiter of step 0; shutdown ends the rest.
  ask(0, 0);
  ask(0, 1);
  ask(0, 0);
  q.advance_step(1);
  ASSERT_EQ(answers.size(), 7u);
  EXPECT_EQ(answers[5].second->episode_id, 1);
  EXPECT_EQ(answers[6].second->episode_id, 1);
  q.shutdown();
  ASSERT_EQ(answers.size(), 8u);
  EXPECT_FALSE(answers[7].second.has_value());
  ask(1, 2);  // after shutdown: at once, nothing
  ASSERT_EQ(answers.size(), 9u);
  EXPECT_FALSE(answers[8].second.has_value());
  EXPECT_THROW(ask(7, 0), Error);
}

TEST(AgenticGroupQueue, FiniteQueueEndsWaitersWhenItsLastEpisodeIsTaken) {
  GroupQueueOptions o;
  o.num_groups = 1;
  o.group_size = 1;
  o.max_episodes_per_group = 1;
  GroupQueueManager q(o);
  std::vector<std::optional<GroupQueueManager::Episode>> answers;
  for (int env = 0; env < 2; ++env)
    q.get_episode_async(0, env, [&](std::optional<GroupQueueManager::Episode> ep) { answers.push_back(ep); });
  q.advance_step(0);
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_TRUE(answers[0].has_value());
  EXPECT_FALSE(answers[1].has_value());  // the only episode is taken and no other will come
}

// Slots number an episode's hand-outs; a group's rollouts come back in slot order, whoever
// finished first (the batch's rows do not depend on timing).
TEST(AgenticGroupQueue, HandOutsAreNumberedAndGroupsComeInSlotOrder) {
  GroupQueueOptions o;
  o.num_groups = 1;
  o.group_size = 3;
  o.group_size_redundancy = 1;
  GroupQueueManager q(o);
  q.advance_step(0);
  std::vector<GroupQueueManager::Episode> eps;
  for (int64_t env : {7, 4, 9, 5}) eps.push_back(*q.get_episode(0, env));
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(eps[i].episode_id, 0);
    EXPECT_EQ(eps[i].slot, i);
  }
  // Slots 2, 0, 3 finish first (slot 3 is the redundant one); slot 1 comes too late.
  for (int64_t slot : {2, 0, 3, 1}) {
    Rollout r{0, 0, 100 + slot, 0, nullptr};
    r.slot = slot;
    q.put(r);
  }
  auto got = q.get_batch(3, 0, 1.0);
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[0].slot, 0);
  EXPECT_EQ((*got)[1].slot, 2);
  EXPECT_EQ((*got)[2].slot, 3);
}

// A queue restored from another's state at a step boundary hands out the same episodes from then
// on (ids, creation steps, slots), including episodes left open at the boundary.
TEST(AgenticGroupQueue, RestoredStateContinuesTheEpisodeNumbering) {
  GroupQueueOptions o;
  o.num_groups = 2;
  o.group_size = 2;
  o.episodes_per_step = 2;
  o.async_generation_ratio = 1;  // episodes of one step stay valid for the next: open ones are kept
  GroupQueueManager a(o);
  auto play = [](GroupQueueManager& q, int64_t group, int64_t env) {
    auto ep = q.get_episode(group, env);
    Rollout r{group, ep->episode_id, env, ep->start_step, nullptr};
    r.slot = ep->slot;
    q.put(r);
    return *ep;
  };
  for (int64_t step = 0; step < 3; ++step) {
    a.advance_step(step);
    for (int64_t g = 0; g < 2; ++g)
      for (int64_t env = 0; env < 2; ++env) play(a, g, 10 * g + env);
    ASSERT_TRUE(a.get_batch(4, step, 1.0).has_value());
  }
  const nlohmann::json saved = a.state();
  GroupQueueManager b(o);
  b.restore(nlohmann::json::parse(saved.dump()));  // as read back from the checkpoint
  EXPECT_EQ(b.state(), saved);
  for (int64_t step = 3; step < 5; ++step) {
    a.advance_step(step);
    b.advance_step(step);
    for (int64_t g = 0; g < 2; ++g)
      for (int64_t env = 0; env < 2; ++env) {
        const auto ea = play(a, g, env), eb = play(b, g, env);
        EXPECT_EQ(ea.episode_id, eb.episode_id) << "step " << step << " group " << g;
        EXPECT_EQ(ea.start_step, eb.start_step);
        EXPECT_EQ(ea.slot, eb.slot);
      }
    auto ba = a.get_batch(4, step, 1.0), bb = b.get_batch(4, step, 1.0);
    ASSERT_TRUE(ba && bb);
    ASSERT_EQ(ba->size(), bb->size());
    for (size_t i = 0; i < ba->size(); ++i) {
      EXPECT_EQ((*ba)[i].episode_id, (*bb)[i].episode_id);
      EXPECT_EQ((*ba)[i].slot, (*bb)[i].slot);
    }
  }
  EXPECT_GE(saved["groups"][0]["next_episode"].get<int64_t>(), 6);  // 2 per step, plus the look-ahead batch

  // A used queue, a state of another shape, a malformed state: errors that say so.
  EXPECT_THROW(a.restore(saved), Error);
  GroupQueueOptions one = o;
  one.num_groups = 1;
  GroupQueueManager c(one);
  EXPECT_THROW(c.restore(saved), Error);
  GroupQueueManager d(o);
  EXPECT_THROW(d.restore(nlohmann::json{{"groups", 3}}), Error);
}
