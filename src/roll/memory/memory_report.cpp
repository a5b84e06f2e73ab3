#include "roll/memory/memory_report.h"

#include <fmt/format.h>

#include <map>

#include "roll/config/device_mapping.h"

namespace roll::memory {
namespace {

std::string gb(int64_t bytes) { return fmt::format("{:.2f} GB", static_cast<double>(bytes) / 1e9); }

// What makes two devices (or two workers on one) print the same: their clusters and figures.
std::string worker_signature(const WorkerMemory& w) {
  std::string s = w.cluster;
  for (const auto& p : w.resident) s += fmt::format("|{}={}", p.name, p.bytes);
  for (const auto& p : w.states) s += fmt::format("|state:{}={}", p.name, p.bytes);
  for (const auto& [phase, parts] : w.transient)
    for (const auto& p : parts) s += fmt::format("|{}:{}={}", phase, p.name, p.bytes);
  for (const auto& p : w.host) s += fmt::format("|host:{}={}", p.name, p.bytes);
  return s;
}

std::string device_signature(const MemoryPlan& plan, const DeviceMemory& d) {
  std::string s = fmt::format("node{}", d.node);
  for (size_t i : d.workers) s += "#" + worker_signature(plan.workers[i]);
  return s;
}

void print_worker(std::string& out, const WorkerMemory& w, size_t alike) {
  out += fmt::format("    {}{}\n", w.worker, alike > 1 ? fmt::format(" (and {} more alike)", alike - 1) : "");
  auto line = [&](const std::string& label, const Part& p) {
    out += fmt::format("      {:<38} {:>10}  {}\n", label, gb(p.bytes), p.detail);
  };
  for (const auto& p : w.resident) line(p.name, p);
  for (const auto& p : w.states) line(p.name, p);
  for (const char* phase : kPhases)
    if (auto it = w.transient.find(phase); it != w.transient.end())
      for (const auto& p : it->second) line(fmt::format("[{}] {}", phase, p.name), p);
  for (const auto& p : w.host) line("[host memory] " + p.name, p);
  for (const auto& n : w.notes) out += fmt::format("      note: {}\n", n);
}

}  // namespace

std::string format_memory_plan(const MemoryPlan& plan, const std::vector<Advice>& advice) {
  std::string out = fmt::format("memory plan: {} ({})\n", config::platform_rules(plan.platform).name,
                                plan.capacity.description);
  for (const auto& u : plan.unknown) out += fmt::format("  unknown model size: {}\n", u);
  // Alike devices print once.
  std::map<std::string, std::vector<size_t>> groups;
  std::vector<std::string> order;
  for (size_t i = 0; i < plan.devices.size(); ++i) {
    const std::string sig = device_signature(plan, plan.devices[i]);
    if (!groups.count(sig)) order.push_back(sig);
    groups[sig].push_back(i);
  }
  const int64_t cap = plan.capacity.bytes;
  for (const auto& sig : order) {
    const auto& members = groups[sig];
    const DeviceMemory& d = plan.devices[members.front()];
    std::vector<int> ids;
    for (size_t i : members) ids.push_back(plan.devices[i].device);
    const std::string where = d.device < 0 ? fmt::format("node {} (host RAM)", d.node)
                                           : fmt::format("node {} device{} {}", d.node, ids.size() > 1 ? "s" : "",
                                                         config::format_device_ids(ids));
    std::string verdict;
    if (!plan.complete()) verdict = "incomplete (a model's size is unknown)";
    else if (cap <= 0) verdict = "no verdict (capacity unknown)";
    else if (d.fits(cap)) verdict = fmt::format("fits, {} free", gb(cap - d.peak_bytes));
    else verdict = fmt::format("OVERFLOWS by {}", gb(d.peak_bytes - cap));
    out += fmt::format("  {}: peak {} in {}{}: {}\n", where, gb(d.peak_bytes), d.peak_phase,
                       cap > 0 ? " of " + gb(cap) : "", verdict);
    // Alike workers on the device print once.
    std::map<std::string, size_t> count;
    std::vector<size_t> first;
    for (size_t i : d.workers) {
      const std::string ws = worker_signature(plan.workers[i]);
      if (count[ws]++ == 0) first.push_back(i);
    }
    for (size_t i : first) print_worker(out, plan.workers[i], count[worker_signature(plan.workers[i])]);
    out += "    per phase:";
    for (const char* phase : kPhases)
      if (std::string(phase) != "load" || d.device < 0)  // accelerators load through host memory
        out += fmt::format(" {} {}", phase, gb(d.phase_bytes.at(phase)));
    out += "\n";
  }
  for (const auto& [node, bytes] : plan.host_bytes)
    out += fmt::format("  node {} host memory: {} (offloaded state and the workers' processes)\n", node, gb(bytes));
  if (!plan.complete()) {
    out += "memory: no verdict, a model's size is unknown\n";
  } else if (cap <= 0) {
    out += "memory: no verdict without the device's memory (--device NAME or --device-memory-gb N)\n";
  } else if (plan.fits()) {
    out += fmt::format("memory: fits, largest peak {} of {}\n", gb(largest_peak(plan)), gb(cap));
  } else {
    out += fmt::format("memory: OVERFLOW, largest peak {} of {}\n", gb(largest_peak(plan)), gb(cap));
    if (advice.empty()) out += "  no single change the plan knows brings it within the capacity\n";
    for (size_t i = 0; i < advice.size(); ++i) {
      const auto& a = advice[i];
      out += fmt::format("  {}. {} -> peak {}{}: {}\n", i + 1, fmt::join(a.overrides, " "), gb(a.peak_bytes),
                         a.fits ? " (fits)" : " (not enough alone)", a.why);
    }
  }
  return out;
}

nlohmann::json memory_plan_json(const MemoryPlan& plan, const std::vector<Advice>& advice) {
  using nlohmann::json;
  auto parts_json = [](const std::vector<Part>& parts) {
    json a = json::array();
    for (const auto& p : parts) a.push_back({{"part", p.name}, {"bytes", p.bytes}, {"detail", p.detail}});
    return a;
  };
  json j;
  j["platform"] = config::platform_rules(plan.platform).name;
  j["capacity_bytes"] = plan.capacity.bytes;
  j["capacity"] = plan.capacity.description;
  j["complete"] = plan.complete();
  j["unknown"] = plan.unknown;
  j["fits"] = plan.fits();
  j["workers"] = json::array();
  for (const auto& w : plan.workers) {
    json t = json::object();
    for (const auto& [phase, parts] : w.transient) t[phase] = parts_json(parts);
    json phases = json::object();
    for (const char* phase : kPhases) phases[phase] = w.phase_bytes(phase);
    j["workers"].push_back({{"cluster", w.cluster},
                            {"worker", w.worker},
                            {"node", w.node},
                            {"devices", w.devices},
                            {"resident", parts_json(w.resident)},
                            {"states", parts_json(w.states)},
                            {"offloads", w.offloads},
                            {"active_phases", w.active},
                            {"transient", t},
                            {"host", parts_json(w.host)},
                            {"phase_bytes", phases},
                            {"peak_bytes", w.peak_bytes()},
                            {"peak_phase", w.peak_phase()},
                            {"notes", w.notes}});
  }
  j["devices"] = json::array();
  for (const auto& d : plan.devices) {
    json names = json::array();
    for (size_t i : d.workers) names.push_back(plan.workers[i].worker);
    j["devices"].push_back({{"node", d.node},
                            {"device", d.device},
                            {"workers", names},
                            {"phase_bytes", d.phase_bytes},
                            {"peak_bytes", d.peak_bytes},
                            {"peak_phase", d.peak_phase},
                            {"fits", d.fits(plan.capacity.bytes)}});
  }
  j["host_bytes"] = json::object();
  for (const auto& [node, bytes] : plan.host_bytes) j["host_bytes"][std::to_string(node)] = bytes;
  j["advice"] = json::array();
  for (const auto& a : advice)
    j["advice"].push_back({{"overrides", a.overrides}, {"why", a.why}, {"peak_bytes", a.peak_bytes}, {"fits", a.fits}});
  return j;
}

}  // namespace roll::memory
