// A manual cluster's node agent (`roll start --address=HOST:PORT`; see cluster_daemon.h).
#include <fmt/format.h>
#include <unistd.h>

#include <mutex>
#include <thread>

#include "roll/comm/store.h"
#include "roll/core/error.h"
#include "roll/core/json_number.h"
#include "roll/core/log.h"
#include "roll/core/log_sinks.h"
#include "roll/runtime/cluster_daemon.h"
#include "roll/runtime/cluster_view.h"
#include "roll/runtime/daemon_process.h"
#include "roll/runtime/node_agent.h"
#include "roll/runtime/node_join.h"

namespace roll::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// The job a pipeline on the head gave this node (cluster_keys::node_job).
struct JobAssignment {
  int job = 0;
  NodeIdentity id;
};

JobAssignment parse_assignment(const nlohmann::json& j) {
  JobAssignment a;
  a.job = json_integer<int>(j.at("job"), "job");
  a.id.rank = json_integer<int>(j.at("rank"), "rank");
  a.id.world_size = json_integer<int>(j.at("world_size"), "world_size");
  a.id.master_addr = j.at("master_addr").get<std::string>();
  a.id.master_port = j.at("master_port").get<uint16_t>();
  a.id.worker_id = fmt::format("{}:{}", a.id.master_addr, a.id.rank);
  a.id.rank_source = "cluster";
  return a;
}

}  // namespace

int run_agent_daemon(const AgentDaemonOptions& o) {
  StopSignals stop;  // before any thread starts
  log::set_identity("AGENT", 0, 0);
  const std::string head = o.head.str();
  NodeIdentity as_node;  // this node towards the head, for its address and the join log
  as_node.rank = 1;
  as_node.world_size = 2;
  as_node.master_addr = o.head.host;
  as_node.master_port = o.head.port;
  std::shared_ptr<comm::Store> store;
  int node_id = 0;
  NodeInfo self;
  try {
    ensure_no_daemon(o.state_dir, DaemonRole::agent);
    store = wait_for_head(as_node, o.head_wait_timeout, o.heartbeat_timeout);
    node_id = static_cast<int>(store->add(cluster_keys::kNextNode, 1));
    as_node.rank = node_id;
    as_node.worker_id = fmt::format("{}:{}", o.head.host, node_id);
    log::set_identity("NODE", node_id, 0);
    self = this_node(as_node, o.devices, o.device_key);
    store->set(cluster_keys::node(node_id), self.to_json().dump());
    DaemonRecord r = this_daemon(DaemonRole::agent, head, o.log_file);
    r.node_id = node_id;
    write_daemon_record(o.state_dir, r);
  } catch (const std::exception& e) {
    log::error("{}", e.what());
    report_ready(o.ready_fd, false, e.what());
    return 1;
  }
  log::info("{} joined the roll cluster at {}", self.describe(), head);
  report_ready(o.ready_fd, true, fmt::format("node {} ({}) joined the cluster at {}", node_id, self.address, head));

  std::mutex mu;
  std::vector<std::string> running;  // the current job's workers, under mu
  // The process ends here (its workers die with it, PR_SET_PDEATHSIG): on a stop signal, when the
  // head stops, or when the head is lost. Beats from its own connection so a job never delays them.
  auto leave = [&](int rc) {
    remove_daemon_record(o.state_dir, DaemonRole::agent);
    log::flush();
    std::_Exit(rc);
  };
  std::thread beats([&] {
    std::shared_ptr<comm::Store> link;
    int64_t head_beat = -1;
    auto head_changed = Clock::now();
    try {
      link = comm::Store::tcp({o.head.host, o.head.port, false, o.heartbeat_timeout});
    } catch (const std::exception& e) {
      log::error("node {} lost the head at {}: {}", node_id, head, e.what());
      leave(1);
    }
    for (;;) {
      if (stop.wait(std::chrono::seconds(1))) {
        log::info("stop signal: node {} leaves the cluster at {}", node_id, head);
        leave(0);
      }
      try {
        link->add(cluster_keys::node_heartbeat(node_id), 1);
        {
          std::lock_guard<std::mutex> g(mu);
          link->set(cluster_keys::node_workers(node_id), nlohmann::json(running).dump());
        }
        if (link->check({cluster_keys::kStop})) {
          link->add(cluster_keys::kStopAcks, 1);
          log::info("the head at {} stopped; node {} exits", head, node_id);
          leave(0);
        }
        const auto now = Clock::now();
        const int64_t hb = link->add(cluster_keys::kHeartbeat, 0);
        if (hb != head_beat) {
          head_beat = hb;
          head_changed = now;
        } else if (now - head_changed > o.heartbeat_timeout) {
          log::error("node {} lost the head at {}: no heartbeat for {:.1f} s (ROLL_HEARTBEAT_TIMEOUT={:.0f})", node_id,
                     head, std::chrono::duration<double>(now - head_changed).count(),
                     std::chrono::duration<double>(o.heartbeat_timeout).count());
          leave(1);
        }
      } catch (const std::exception& e) {
        log::error("node {} lost the head at {}: {}", node_id, head, e.what());
        leave(1);
      }
    }
  });
  beats.detach();

  // The jobs, one after another: each is a Method A job whose head is the pipeline's driver.
  for (int n = 0;;) {
    try {
      if (!store->check({cluster_keys::node_job(node_id, n)})) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      const JobAssignment a = parse_assignment(nlohmann::json::parse(store->get(cluster_keys::node_job(node_id, n))));
      ++n;
      log::info("job {}: node {} runs as rank {} of {}; driver at {}:{}", a.job, node_id, a.id.rank, a.id.world_size,
                a.id.master_addr, a.id.master_port);
      try {
        auto job_store = wait_for_head(a.id, o.head_wait_timeout, o.heartbeat_timeout);
        join_nodes(*job_store, this_node(a.id, o.devices, o.device_key));
        NodeAgentOptions ao;
        ao.worker_command = o.worker_command;
        ao.heartbeat_timeout = o.heartbeat_timeout;
        ao.on_workers = [&](const std::vector<std::string>& names) {
          std::lock_guard<std::mutex> g(mu);
          running = names;
        };
        const int rc = run_node_agent(a.id, job_store, ao);
        log::info("job {} ended ({}); node {} waits for the next job", a.job, rc == 0 ? "ok" : "failed", node_id);
      } catch (const std::exception& e) {
        log::error("job {}: {}", a.job, e.what());
      }
      std::lock_guard<std::mutex> g(mu);
      running.clear();
    } catch (const std::exception& e) {
      // The head's store: the heartbeat thread decides whether the head is gone.
      log::warn("node {}: {}", node_id, e.what());
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }
}

}  // namespace roll::runtime
