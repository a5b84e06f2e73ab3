// The head daemon of a manual cluster (`roll start --head`; see cluster_daemon.h).
#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <unistd.h>

#include <map>
#include <thread>

#include "roll/comm/store.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/runtime/cluster_daemon.h"
#include "roll/runtime/cluster_view.h"
#include "roll/runtime/daemon_process.h"
#include "roll/runtime/node_identity.h"

namespace roll::runtime {
namespace {

using Clock = std::chrono::steady_clock;

std::string first_interface_address() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "127.0.0.1";
  std::string found = "127.0.0.1";
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || !(a->ifa_flags & IFF_UP) || (a->ifa_flags & IFF_LOOPBACK))
      continue;
    char buf[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf, sizeof buf);
    found = buf;
    break;
  }
  freeifaddrs(list);
  return found;
}

// A counter someone else bumps: alive while it keeps changing within the heartbeat timeout.
struct Beat {
  int64_t value = -1;
  Clock::time_point changed = Clock::now();
  // Returns the seconds since the last change.
  double observe(int64_t v, Clock::time_point now) {
    if (v != value) value = v, changed = now;
    return std::chrono::duration<double>(now - changed).count();
  }
};

struct JobSeen {
  ClusterJobRecord record;
  Beat beat;
};

// Why a job that did not say it ended is over, or "": a driver on this machine is over when its
// process is; one elsewhere when it stopped beating for long (a busy driver's beats may lag).
std::string driver_gone(const ClusterJobRecord& job, const std::string& this_host, double silent_s,
                        double heartbeat_timeout_s) {
  if (!job.driver_host.empty() && job.driver_host == this_host)
    return roll_process_alive(job.driver_pid) ? "" : fmt::format("its driver (pid {}) is gone", job.driver_pid);
  return silent_s > 10 * heartbeat_timeout_s
             ? fmt::format("its driver (pid {} on {}) stopped beating {:.1f} s ago", job.driver_pid, job.driver_host, silent_s)
             : "";
}

}  // namespace

std::string head_node_address(const comm::EnvLookup& env, const std::string& node_ip) {
  if (!node_ip.empty()) return node_ip;
  for (const char* var : {"GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME", "HCCL_IF_IP"})
    if (env(var)) {
      NodeIdentity id;
      id.world_size = 2;  // as a node of a multi-node job: the variables decide
      return node_address(env, id).address;
    }
  return first_interface_address();
}

int run_head_daemon(const HeadDaemonOptions& o) {
  StopSignals stop;  // before any thread starts
  log::set_identity("HEAD", 0, 1);
  std::shared_ptr<comm::Store> store;
  ClusterView view;
  ClusterView::Node head;  // node 0
  try {
    ensure_no_daemon(o.state_dir, DaemonRole::head);
    const std::string ip = head_node_address(comm::process_env(), o.node_ip);
    try {
      store = comm::Store::tcp({"127.0.0.1", o.port, true, o.heartbeat_timeout});
    } catch (const std::exception& e) {
      throw Error(fmt::format("cannot host the cluster store at port {} (--port): {}", o.port, e.what()));
    }
    head.info.rank = 0;
    head.info.address = ip;
    head.info.worker_id = fmt::format("{}:0", ip);
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) head.info.hostname = host;
    head.info.devices = o.devices;
    head.info.device_key = o.device_key;
    head.info.cores = static_cast<int>(std::thread::hardware_concurrency());
    view.head_address = HostPort{ip, o.port}.str();
    view.dashboard_port = o.dashboard_port;
    view.heartbeat_timeout_s = std::chrono::duration<double>(o.heartbeat_timeout).count();
    view.nodes.push_back(head);
    store->set(cluster_keys::kView, view.to_json().dump());
    DaemonRecord r = this_daemon(DaemonRole::head, view.head_address, o.log_file);
    r.dashboard_port = o.dashboard_port;
    write_daemon_record(o.state_dir, r);
  } catch (const std::exception& e) {
    log::error("{}", e.what());
    report_ready(o.ready_fd, false, e.what());
    return 1;
  }
  log::info("roll head started at {}: {} {} device(s); jobs serve their dashboard on port {}; "
            "heartbeat timeout {:.0f} s",
            view.head_address, o.devices, o.device_key, o.dashboard_port, view.heartbeat_timeout_s);
  report_ready(o.ready_fd, true, view.head_address);

  std::map<int, Beat> beats;  // node id -> its heartbeat
  std::map<int, JobSeen> jobs;
  int next_node = 1, next_job = 0;
  auto last_beat = Clock::now() - std::chrono::seconds(1);
  while (!stop.wait(std::chrono::milliseconds(200))) {
    try {
      const auto now = Clock::now();
      if (now - last_beat >= std::chrono::seconds(1)) {
        store->add(cluster_keys::kHeartbeat, 1);
        last_beat = now;
      }
      // An agent takes its id before it writes its info: wait for the info.
      const int ids = static_cast<int>(store->add(cluster_keys::kNextNode, 0));
      while (next_node <= ids && store->check({cluster_keys::node(next_node)})) {
        ClusterView::Node n;
        n.id = next_node++;
        n.info = NodeInfo::parse(store->get(cluster_keys::node(n.id)), cluster_keys::node(n.id));
        log::info("{} joined: {} {} device(s), {} cores", n.info.describe(), n.info.devices, n.info.device_key,
                  n.info.cores);
        view.nodes.push_back(std::move(n));
      }
      const int job_ids = static_cast<int>(store->add(cluster_keys::kNextJob, 0));
      while (next_job < job_ids && store->check({cluster_keys::job(next_job)})) {
        JobSeen j;
        j.record = ClusterJobRecord::from_json(nlohmann::json::parse(store->get(cluster_keys::job(next_job))));
        log::info("job {} started: {} (driver pid {}) on {} node(s)", j.record.id, j.record.name,
                  j.record.driver_pid, j.record.node_ids.size());
        jobs.emplace(next_job++, std::move(j));
      }
      for (auto it = jobs.begin(); it != jobs.end();) {
        const int id = it->first;
        const double silent = it->second.beat.observe(store->add(cluster_keys::job_heartbeat(id), 0), now);
        if (store->check({cluster_keys::job_ended(id)})) {
          log::info("job {} ended: {}", id, store->get(cluster_keys::job_ended(id)));
          it = jobs.erase(it);
        } else if (const std::string why = driver_gone(it->second.record, head.info.hostname, silent,
                                                         view.heartbeat_timeout_s);
                   !why.empty()) {
          log::warn("job {}: {}; counted as ended", id, why);
          store->set(cluster_keys::job_ended(id), why);
          it = jobs.erase(it);
        } else {
          ++it;
        }
      }
      view.jobs.clear();
      std::vector<std::string> head_workers;  // node 0's workers are the drivers' own children
      for (const auto& [id, j] : jobs) {
        view.jobs.push_back(j.record);
        if (auto w = j.record.workers.find(0); w != j.record.workers.end())
          head_workers.insert(head_workers.end(), w->second.begin(), w->second.end());
      }
      for (auto& n : view.nodes) {
        if (n.id == 0) {
          n.workers = head_workers;
          continue;
        }
        n.silent_s = beats[n.id].observe(store->add(cluster_keys::node_heartbeat(n.id), 0), now);
        const bool alive = n.silent_s <= view.heartbeat_timeout_s;
        if (n.alive && !alive) log::warn("{} stopped sending heartbeats ({:.1f} s)", n.info.describe(), n.silent_s);
        if (!n.alive && alive) log::info("{} beats again", n.info.describe());
        n.alive = alive;
        n.workers = store->check({cluster_keys::node_workers(n.id)})
                        ? nlohmann::json::parse(store->get(cluster_keys::node_workers(n.id))).get<std::vector<std::string>>()
                        : std::vector<std::string>{};
      }
      store->set(cluster_keys::kView, view.to_json().dump());
    } catch (const std::exception& e) {
      log::error("cluster head: {}", e.what());
    }
  }
  int alive = 0;
  for (const auto& n : view.nodes) alive += n.id != 0 && n.alive;
  log::info("stopping the roll head at {}: telling {} node agent(s) to exit", view.head_address, alive);
  try {
    store->set(cluster_keys::kStop, "1");
    // Agents look every second; the store lives in this process, so give them time to see it.
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (store->add(cluster_keys::kStopAcks, 0) < alive && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } catch (const std::exception& e) {
    log::warn("could not tell the node agents to stop: {}", e.what());
  }
  remove_daemon_record(o.state_dir, DaemonRole::head);
  log::info("roll head stopped");
  return 0;
}

}  // namespace roll::runtime
