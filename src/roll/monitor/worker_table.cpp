#include "roll/monitor/worker_table.h"

#include <unistd.h>

#include <chrono>

#include <fmt/format.h>

#include "roll/core/proc_stat.h"
#include "roll/core/process_memory.h"
#include "roll/runtime/runtime.h"

namespace roll::monitor {
namespace {

// utime + stime of /proc/<pid>/stat in seconds.
std::optional<double> cpu_seconds(int pid) {
  const auto fields = core::proc_stat_fields(pid);
  if (fields.size() < 13) return std::nullopt;
  return (std::stod(fields[11]) + std::stod(fields[12])) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::string device_list(const std::vector<int>& devices) {
  if (devices.empty()) return "cpu";
  std::string s;
  for (int d : devices) s += (s.empty() ? "" : ",") + std::to_string(d);
  return s;
}

}  // namespace

std::optional<double> WorkerTable::cpu_percent(int pid, double now_s) {
  const auto cpu = cpu_seconds(pid);
  if (!cpu) return std::nullopt;
  std::lock_guard<std::mutex> g(mu_);
  auto it = last_cpu_.find(pid);
  std::optional<double> out;
  if (it != last_cpu_.end() && now_s > it->second.second)
    out = 100.0 * (*cpu - it->second.first) / (now_s - it->second.second);
  last_cpu_[pid] = {*cpu, now_s};
  return out;
}

nlohmann::json WorkerTable::sample(const runtime::Runtime& runtime) {
  const auto now = std::chrono::steady_clock::now();
  const double now_s = std::chrono::duration<double>(now.time_since_epoch()).count();
  nlohmann::json workers = nlohmann::json::array();
  // (cluster, method) -> ranks and the longest running time
  std::map<std::pair<std::string, std::string>, std::pair<std::vector<int>, double>> flights;
  for (const auto& cluster : runtime.clusters()) {
    const auto& placement = cluster->spec().placement;
    for (int rank = 0; rank < cluster->world_size(); ++rank) {
      const auto& wp = placement.workers.at(static_cast<size_t>(rank));
      const auto a = cluster->activity(rank);
      nlohmann::json w{{"name", wp.name},        {"cluster", cluster->name()}, {"rank", rank},
                       {"node", wp.node},        {"devices", device_list(wp.devices)},
                       {"pid", a.pid},           {"alive", a.running},         {"call", nullptr},
                       {"call_s", nullptr},      {"cpu_percent", nullptr},     {"rss_mb", nullptr}};
      if (!a.calls.empty()) {
        // The oldest call is the one the worker is in (serial methods run in arrival order).
        const auto& first = a.calls.front();
        const double s = std::chrono::duration<double>(now - first.started).count();
        w["call"] = first.method;
        w["call_s"] = s;
        for (const auto& c : a.calls) {
          auto& f = flights[{cluster->name(), c.method}];
          if (f.first.empty() || f.first.back() != rank) f.first.push_back(rank);
          f.second = std::max(f.second, std::chrono::duration<double>(now - c.started).count());
        }
      }
      if (a.on_this_node && a.pid > 0 && a.running) {
        if (auto cpu = cpu_percent(a.pid, now_s)) w["cpu_percent"] = *cpu;
        if (auto mem = core::process_memory(a.pid)) w["rss_mb"] = static_cast<double>(mem->rss_bytes) / (1 << 20);
      }
      workers.push_back(std::move(w));
    }
  }
  nlohmann::json in_flight = nlohmann::json::array();
  for (const auto& [key, f] : flights)
    in_flight.push_back({{"cluster", key.first}, {"method", key.second}, {"ranks", f.first}, {"running_s", f.second}});
  return {{"workers", std::move(workers)}, {"in_flight", std::move(in_flight)}};
}

}  // namespace roll::monitor
