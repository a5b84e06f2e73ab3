// ROLL's EnvActivityMonitor over the group queue: an env handed an episode and silent past
// hung_timeout is reported; one that put its rollout or exited is not.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "roll/agentic/env_activity_monitor.h"
#include "roll/agentic/group_queue.h"
#include "roll/core/error.h"

using namespace roll;
using namespace roll::agentic;

namespace {

GroupQueueOptions two_groups() {
  GroupQueueOptions o;
  o.num_groups = 2;
  o.group_size = 2;
  return o;
}

}  // namespace

TEST(AgenticEnvActivityMonitor, ReportsEnvsSilentPastTheTimeout) {
  GroupQueueManager q(two_groups());
  q.advance_step(0);
  auto a = q.get_episode(0, 0);
  auto b = q.get_episode(0, 1);
  auto c = q.get_episode(1, 2);
  ASSERT_TRUE(a && b && c);
  EXPECT_TRUE(q.hung_envs(0.05).empty()) << "nobody is late yet";
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  q.put(Rollout{0, b->episode_id, 1, b->start_step, nullptr});  // env 1 delivered
  q.env_exit(1, 2);                                              // env 2 left
  const auto hung = q.hung_envs(0.05);
  ASSERT_EQ(hung.size(), 1u);
  EXPECT_EQ(hung[0].group_id, 0);
  EXPECT_EQ(hung[0].env_id, 0);
  EXPECT_EQ(hung[0].episode_id, a->episode_id);
  EXPECT_GE(hung[0].seconds, 0.1);
  EXPECT_TRUE(q.hung_envs(60).empty()) << "under a long timeout nothing is hung";
  q.shutdown();
}

TEST(AgenticEnvActivityMonitor, ThreadReportsEachInterval) {
  GroupQueueManager q(two_groups());
  q.advance_step(0);
  ASSERT_TRUE(q.get_episode(1, 3));
  std::mutex mu;
  std::vector<GroupQueueManager::HungEnv> last;
  int reports = 0;
  {
    EnvActivityMonitor monitor(q, EnvMonitorOptions{0.05, 0.02}, [&](const auto& hung) {
      std::lock_guard<std::mutex> g(mu);
      last = hung;
      ++reports;
    });
    for (int i = 0; i < 200; ++i) {
      {
        std::lock_guard<std::mutex> g(mu);
        if (reports >= 2) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ASSERT_GE(reports, 2);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].group_id, 1);
  EXPECT_EQ(last[0].env_id, 3);
  q.shutdown();
}

TEST(AgenticEnvActivityMonitor, RejectsNonPositiveSettings) {
  GroupQueueManager q(two_groups());
  EXPECT_THROW(EnvActivityMonitor(q, EnvMonitorOptions{0, 10}), Error);
  EXPECT_THROW(EnvActivityMonitor(q, EnvMonitorOptions{1, -1}), Error);
}
