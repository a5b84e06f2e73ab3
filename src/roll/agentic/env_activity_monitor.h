#pragma once
// ROLL's EnvActivityMonitor (env_monitor: enable, monitor_interval, hung_timeout; docs/agentic.md):
// a thread that every monitor_interval seconds asks the train queue which envs were handed an
// episode more than hung_timeout seconds ago without putting its rollout, and logs them per group
// as `[EnvMonitor] Group g: Detected k hung envs: [...]`. The last report also goes to `on_report`
// (the dashboard).
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "roll/agentic/group_queue.h"

namespace roll::agentic {

struct EnvMonitorOptions {
  double interval_s = 30;
  double hung_timeout_s = 3600;
};

class EnvActivityMonitor {
 public:
  using Report = std::function<void(const std::vector<GroupQueueManager::HungEnv>&)>;
  // Starts the thread; `queue` must outlive the monitor.
  EnvActivityMonitor(const GroupQueueManager& queue, EnvMonitorOptions options, Report on_report = {});
  ~EnvActivityMonitor();  // stops the thread
  EnvActivityMonitor(const EnvActivityMonitor&) = delete;
  EnvActivityMonitor& operator=(const EnvActivityMonitor&) = delete;

  // One pass (what the thread does each interval): logs the hung envs and reports them.
  std::vector<GroupQueueManager::HungEnv> check();

 private:
  void loop();

  const GroupQueueManager& queue_;
  const EnvMonitorOptions o_;
  const Report on_report_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace roll::agentic
