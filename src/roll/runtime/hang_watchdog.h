#pragma once
// The driver's hang watchdog (docs/runtime.md, "Hang watchdog"). A run that stops moving with no
// error is the most common complaint of RL frameworks' users; `rpc_timeout` ends such a call only
// after an hour. The watchdog looks at every call in flight once a second; when one has run past
// its bound it asks the worker for every thread's stack (the `__stacks` built-in, answered on the
// worker's socket thread) and logs it naming the worker. A worker that does not answer (stopped,
// stuck in the kernel) is reported with its /proc state. One report per call.
//
// The bound of a call of method M on cluster C: factor x the median time of M's earlier answered
// calls on C, at least min_bound; M's first calls (no history yet: model loading, warm-up) get
// factor x min_bound.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

namespace roll::runtime {

class Cluster;

struct WatchdogOptions {
  std::chrono::milliseconds min_bound{std::chrono::seconds(120)};  // 0: the watchdog is off
  double factor = 5.0;
  std::chrono::milliseconds poll{1000};
  std::chrono::milliseconds answer_timeout{std::chrono::seconds(10)};  // for the stacks
};

struct StallReport {
  std::string worker;  // Cluster::describe
  std::string cluster;
  int rank = 0;
  int pid = 0;
  std::string method;
  double running_s = 0, bound_s = 0;
  std::string basis;  // how the bound was found: "5 x the median 1.2 s of 7 earlier calls"
  bool answered = false;
  std::string process_state;  // "T (stopped)"; "" when the worker is on another node
  std::string stacks;         // formatted; empty when the worker did not answer
  double unix_time = 0;

  nlohmann::json to_json() const;
  std::string message() const;  // the log's text, stacks included
};

// The bound in seconds for a call given how long the method's earlier calls took; `basis` (may be null)
// says how it was found.
double watchdog_bound_seconds(const WatchdogOptions& o, std::vector<double> earlier, std::string* basis);

class HangWatchdog {
 public:
  using ClusterList = std::function<std::vector<std::shared_ptr<Cluster>>()>;
  HangWatchdog(WatchdogOptions options, ClusterList clusters);
  ~HangWatchdog();
  HangWatchdog(const HangWatchdog&) = delete;
  HangWatchdog& operator=(const HangWatchdog&) = delete;

  const WatchdogOptions& options() const { return options_; }
  std::vector<StallReport> reports() const;  // oldest first (the most recent 100)

 private:
  void run();
  void check(Cluster& cluster);
  StallReport inspect(Cluster& cluster, int rank, const std::string& method, double running_s, double bound_s,
                      const std::string& basis);

  WatchdogOptions options_;
  ClusterList clusters_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<StallReport> reports_;
  std::set<std::tuple<std::string, int, uint64_t>> reported_;  // (cluster, rank, call id) already reported
  std::thread thread_;
};

}  // namespace roll::runtime
