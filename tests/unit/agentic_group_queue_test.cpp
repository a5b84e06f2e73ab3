// GroupQueueManager invariants of ROLL's test_rollout_scheduler (spec 10.1), with real env threads.
#include <gtest/gtest.h>

#include <atomic>
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
