#include "roll/runtime/hang_watchdog.h"

#include <algorithm>

#include <fmt/format.h>

#include "roll/core/log.h"
#include "roll/core/thread_stacks.h"
#include "roll/runtime/cluster.h"

namespace roll::runtime {
namespace {

double seconds(std::chrono::milliseconds d) { return static_cast<double>(d.count()) / 1000.0; }

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

double watchdog_bound_seconds(const WatchdogOptions& o, std::vector<double> earlier, std::string* basis) {
  const double floor = seconds(o.min_bound);
  if (earlier.empty()) {
    if (basis) *basis = fmt::format("{:g} x {:g} s: no earlier call of the method", o.factor, floor);
    return o.factor * floor;
  }
  std::sort(earlier.begin(), earlier.end());
  const size_t n = earlier.size();
  const double median = n % 2 ? earlier[n / 2] : 0.5 * (earlier[n / 2 - 1] + earlier[n / 2]);
  const double bound = std::max(floor, o.factor * median);
  if (basis)
    *basis = bound > floor ? fmt::format("{:g} x the median {:.3g} s of {} earlier calls", o.factor, median, n)
                           : fmt::format("the floor {:g} s ({:g} x the median {:.3g} s of {} earlier calls is less)",
                                         floor, o.factor, median, n);
  return bound;
}

nlohmann::json StallReport::to_json() const {
  return {{"worker", worker},     {"cluster", cluster},         {"rank", rank},
          {"pid", pid},           {"method", method},           {"running_s", running_s},
          {"bound_s", bound_s},   {"basis", basis},             {"answered", answered},
          {"process_state", process_state}, {"stacks", stacks}, {"unix", unix_time}};
}

std::string StallReport::message() const {
  std::string s = fmt::format("watchdog: {} has been in '{}' for {:.0f} s, past its bound of {:.0f} s ({})", worker,
                              method, running_s, bound_s, basis);
  if (answered) return s + "; its threads:\n" + stacks;
  if (process_state.empty()) return s + "; it does not answer (it runs on another node: its process state is not readable here)";
  return s + fmt::format("; it does not answer: process state {}", process_state);
}

HangWatchdog::HangWatchdog(WatchdogOptions options, ClusterList clusters)
    : options_(options), clusters_(std::move(clusters)) {
  if (options_.min_bound.count() > 0) thread_ = std::thread([this] { run(); });
}

HangWatchdog::~HangWatchdog() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::vector<StallReport> HangWatchdog::reports() const {
  std::lock_guard<std::mutex> g(mu_);
  return reports_;
}

void HangWatchdog::run() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      if (wake_.wait_for(lk, options_.poll, [this] { return stopping_; })) return;
    }
    for (const auto& cluster : clusters_()) {
      try {
        check(*cluster);
      } catch (const std::exception& e) {
        log::debug("watchdog: {}: {}", cluster->name(), e.what());
      }
    }
  }
}

void HangWatchdog::check(Cluster& cluster) {
  const auto now = std::chrono::steady_clock::now();
  for (int rank = 0; rank < cluster.world_size(); ++rank) {
    const Cluster::RankActivity a = cluster.activity(rank);
    if (!a.running) continue;
    for (const auto& call : a.calls) {
      const double running_s = std::chrono::duration<double>(now - call.started).count();
      if (running_s < seconds(options_.min_bound)) continue;
      {
        std::lock_guard<std::mutex> g(mu_);
        if (reported_.count({cluster.name(), rank, call.id})) continue;
      }
      std::string basis;
      const double bound = watchdog_bound_seconds(options_, cluster.completed_seconds(call.method), &basis);
      if (running_s < bound) continue;
      StallReport r = inspect(cluster, rank, call.method, running_s, bound, basis);
      log::warn("{}", r.message());
      std::lock_guard<std::mutex> g(mu_);
      reported_.insert({cluster.name(), rank, call.id});
      reports_.push_back(std::move(r));
      if (reports_.size() > 100) reports_.erase(reports_.begin());
    }
  }
}

StallReport HangWatchdog::inspect(Cluster& cluster, int rank, const std::string& method, double running_s,
                                  double bound_s, const std::string& basis) {
  StallReport r;
  r.worker = cluster.describe(rank);
  r.cluster = cluster.name();
  r.rank = rank;
  r.method = method;
  r.running_s = running_s;
  r.bound_s = bound_s;
  r.basis = basis;
  r.unix_time = unix_now();
  const Cluster::RankActivity a = cluster.activity(rank);
  r.pid = static_cast<int>(a.pid);
  if (auto answer = cluster.ask(rank, kStacksMethod, options_.answer_timeout)) {
    r.answered = true;
    r.stacks = answer->args.value("text", std::string());
  }
  if (a.on_this_node && a.pid > 0) r.process_state = core::process_state(a.pid);
  return r;
}

}  // namespace roll::runtime
