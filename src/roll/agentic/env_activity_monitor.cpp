#include "roll/agentic/env_activity_monitor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "roll/core/error.h"
#include "roll/core/log.h"

namespace roll::agentic {

EnvActivityMonitor::EnvActivityMonitor(const GroupQueueManager& queue, EnvMonitorOptions options, Report on_report)
    : queue_(queue), o_(options), on_report_(std::move(on_report)) {
  if (!(o_.interval_s > 0)) throw Error(fmt::format("env_monitor.monitor_interval must be > 0 (got {})", o_.interval_s));
  if (!(o_.hung_timeout_s > 0))
    throw Error(fmt::format("env_monitor.hung_timeout must be > 0 (got {})", o_.hung_timeout_s));
  thread_ = std::thread([this] { loop(); });
}

EnvActivityMonitor::~EnvActivityMonitor() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::vector<GroupQueueManager::HungEnv> EnvActivityMonitor::check() {
  auto hung = queue_.hung_envs(o_.hung_timeout_s);
  std::map<int64_t, std::vector<GroupQueueManager::HungEnv>> by_group;
  for (const auto& h : hung) by_group[h.group_id].push_back(h);
  for (const auto& [group, envs] : by_group) {
    std::vector<int64_t> ids;
    double longest = 0;
    for (const auto& h : envs) {
      ids.push_back(h.env_id);
      longest = std::max(longest, h.seconds);
    }
    log::warn("[EnvMonitor] Group {}: Detected {} hung envs: [{}] (no rollout for over {:.0f} s, longest {:.0f} s)",
              group, ids.size(), fmt::join(ids, ", "), o_.hung_timeout_s, longest);
  }
  if (on_report_) on_report_(hung);
  return hung;
}

void EnvActivityMonitor::loop() {
  const auto interval = std::chrono::duration<double>(o_.interval_s);
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, interval, [this] { return stop_; })) {
    lock.unlock();
    check();
    lock.lock();
  }
}

}  // namespace roll::agentic
