#include "roll/runtime/cluster_view.h"

#include <fmt/format.h>

#include "roll/core/error.h"
#include "roll/core/json_number.h"

namespace roll::runtime {

namespace cluster_keys {
std::string node(int id) { return fmt::format("cluster/nodes/{}", id); }
std::string node_heartbeat(int id) { return fmt::format("cluster/nodes/{}/heartbeat", id); }
std::string node_workers(int id) { return fmt::format("cluster/nodes/{}/workers", id); }
std::string node_job_count(int id) { return fmt::format("cluster/nodes/{}/job_count", id); }
std::string node_job(int id, int n) { return fmt::format("cluster/nodes/{}/jobs/{}", id, n); }
std::string job(int j) { return fmt::format("cluster/jobs/{}", j); }
std::string job_heartbeat(int j) { return fmt::format("cluster/jobs/{}/heartbeat", j); }
std::string job_ended(int j) { return fmt::format("cluster/jobs/{}/ended", j); }
}  // namespace cluster_keys

namespace {

// JSON object keys are strings; node ids are ints.
template <typename T>
nlohmann::json by_node(const std::map<int, T>& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : m) j[std::to_string(k)] = v;
  return j;
}
template <typename T>
std::map<int, T> by_node_from(const nlohmann::json& j) {
  std::map<int, T> m;
  for (const auto& [k, v] : j.items()) m[std::stoi(k)] = v.template get<T>();
  return m;
}

std::string join(const std::vector<std::string>& xs) {
  std::string s;
  for (const auto& x : xs) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

nlohmann::json ClusterJobRecord::to_json() const {
  return {{"id", id},           {"driver_pid", driver_pid},     {"driver_host", driver_host}, {"name", name},
          {"node_ids", node_ids}, {"devices", by_node(devices)}, {"workers", by_node(workers)}};
}

ClusterJobRecord ClusterJobRecord::from_json(const nlohmann::json& j) {
  ClusterJobRecord r;
  r.id = json_integer<int>(j.at("id"), "id");
  r.driver_pid = j.value("driver_pid", 0);
  r.driver_host = j.value("driver_host", "");
  r.name = j.value("name", "");
  r.node_ids = j.at("node_ids").get<std::vector<int>>();
  r.devices = by_node_from<int>(j.value("devices", nlohmann::json::object()));
  r.workers = by_node_from<std::vector<std::string>>(j.value("workers", nlohmann::json::object()));
  return r;
}

nlohmann::json ClusterView::to_json() const {
  nlohmann::json ns = nlohmann::json::array(), js = nlohmann::json::array();
  for (const auto& n : nodes)
    ns.push_back({{"id", n.id}, {"info", n.info.to_json()}, {"alive", n.alive}, {"silent_s", n.silent_s},
                  {"workers", n.workers}});
  for (const auto& job : jobs) js.push_back(job.to_json());
  return {{"head_address", head_address}, {"dashboard_port", dashboard_port},
          {"heartbeat_timeout_s", heartbeat_timeout_s}, {"nodes", ns}, {"jobs", js}};
}

ClusterView ClusterView::from_json(const nlohmann::json& j) {
  try {
    ClusterView v;
    v.head_address = j.at("head_address").get<std::string>();
    v.dashboard_port = j.value("dashboard_port", 0);
    v.heartbeat_timeout_s = j.value("heartbeat_timeout_s", 60.0);
    for (const auto& n : j.at("nodes")) {
      Node x;
      x.id = json_integer<int>(n.at("id"), "node id");
      x.info = NodeInfo::from_json(n.at("info"));
      x.alive = n.value("alive", false);
      x.silent_s = n.value("silent_s", 0.0);
      x.workers = n.value("workers", std::vector<std::string>{});
      v.nodes.push_back(std::move(x));
    }
    for (const auto& job : j.at("jobs")) v.jobs.push_back(ClusterJobRecord::from_json(job));
    return v;
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("the head's cluster view is malformed ({}): is the head a different rollcpp version?",
                            e.what()));
  }
}

int ClusterView::used_devices(int id) const {
  int used = 0;
  for (const auto& job : jobs)
    if (auto it = job.devices.find(id); it != job.devices.end()) used += it->second;
  return used;
}

std::string format_cluster_status(const ClusterView& v, const std::string& now) {
  const std::string rule(63, '-');
  std::string s = fmt::format("======== Cluster status: {} ========\n", now);
  s += fmt::format("Head: {} (a job's dashboard on port {})\n", v.head_address, v.dashboard_port);
  s += "Node status\n" + rule + "\n";
  auto node_line = [&](const ClusterView::Node& n) {
    const NodeInfo& i = n.info;
    std::string line = fmt::format(" node {}{} {}", n.id, n.id == 0 ? " (head)" : "", i.address);
    if (!i.hostname.empty()) line += " host " + i.hostname;
    line += fmt::format(": {} {} device(s), {} cores; workers: {}", i.devices, i.device_key, i.cores,
                        n.workers.empty() ? "(none)" : join(n.workers));
    if (!n.alive) line += fmt::format(" (no heartbeat for {:.1f} s)", n.silent_s);
    return line + "\n";
  };
  for (bool alive : {true, false}) {
    s += alive ? "Active:\n" : "Lost:\n";
    int count = 0;
    for (const auto& n : v.nodes)
      if (n.alive == alive) s += node_line(n), ++count;
    if (count == 0) s += alive ? " (no active nodes)\n" : " (no lost nodes)\n";
  }
  s += "\nResources\n" + rule + "\nUsage:\n";
  std::map<std::string, std::pair<int, int>> by_key;  // device key -> used, total (active nodes)
  int cores = 0;
  for (const auto& n : v.nodes) {
    if (!n.alive) continue;
    auto& [used, total] = by_key[n.info.device_key];
    used += v.used_devices(n.id);
    total += n.info.devices;
    cores += n.info.cores;
  }
  for (const auto& [key, ut] : by_key)
    s += fmt::format(" {}/{} {} device(s) used, {} free\n", ut.first, ut.second, key, ut.second - ut.first);
  s += fmt::format(" {} cores\n", cores);
  s += "Per node:\n";
  for (const auto& n : v.nodes) {
    if (!n.alive) continue;
    const int used = v.used_devices(n.id);
    s += fmt::format(" node {}: {}/{} {} device(s) used, {} free\n", n.id, used, n.info.devices, n.info.device_key,
                     n.info.devices - used);
  }
  s += "\nJobs\n" + rule + "\n";
  if (v.jobs.empty()) s += " (no running jobs)\n";
  for (const auto& job : v.jobs) {
    std::vector<std::string> ids;
    for (int id : job.node_ids) ids.push_back(std::to_string(id));
    s += fmt::format(" job {}: {} (driver pid {}) on nodes {}\n", job.id, job.name.empty() ? "(unnamed)" : job.name,
                     job.driver_pid, join(ids));
  }
  return s;
}

}  // namespace roll::runtime
