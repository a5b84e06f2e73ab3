#pragma once
// The dashboard's view of the workers (docs/dashboard.md): per worker its cluster, rank, node,
// devices, pid, the call it is in and for how long, CPU % and resident memory (read from /proc
// for workers on this node), and the calls in flight grouped by cluster and method.
#include <map>
#include <optional>
#include <mutex>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace roll::runtime {
class Runtime;
}

namespace roll::monitor {

class WorkerTable {
 public:
  // {"workers": [...], "in_flight": [...]} as /api/state carries them.
  nlohmann::json sample(const runtime::Runtime& runtime);

 private:
  // CPU % between two samples of a pid: the ticks it used over the ticks that passed.
  std::optional<double> cpu_percent(int pid, double now_s);
  std::mutex mu_;
  std::map<int, std::pair<double, double>> last_cpu_;  // pid -> (cpu seconds, wall seconds)
};

}  // namespace roll::monitor
