#include "roll/runtime/cluster_job.h"

#include <fmt/format.h>
#include <unistd.h>

#include <set>

#include "roll/comm/store.h"
#include "roll/core/error.h"
#include "roll/core/log.h"

namespace roll::runtime {

std::optional<HostPort> cluster_address(const comm::EnvLookup& env) {
  if (auto a = env("ROLL_ADDRESS")) {
    if (*a == "local") return std::nullopt;
    return parse_host_port(*a, "ROLL_ADDRESS");
  }
  const std::string dir = cluster_dir(env);
  auto r = read_daemon_record(dir, DaemonRole::head);
  if (!r) return std::nullopt;
  if (!roll_process_alive(r->pid)) {
    log::warn("{} names a roll head (pid {}) that no longer runs; ignoring it", state_file(dir, DaemonRole::head),
              r->pid);
    return std::nullopt;
  }
  return parse_host_port(r->address, state_file(dir, DaemonRole::head));
}

ClusterView read_cluster_view(const HostPort& head, std::chrono::milliseconds timeout) {
  std::shared_ptr<comm::Store> store;
  try {
    store = comm::Store::tcp({head.host, head.port, false, timeout});
    if (!store->check({cluster_keys::kView}))
      throw Error("it is a store, but no roll cluster head publishes there");
    return ClusterView::from_json(nlohmann::json::parse(store->get(cluster_keys::kView)));
  } catch (const std::exception& e) {
    throw Error(fmt::format("no roll cluster reachable at {}: {}", head.str(), e.what()));
  }
}

std::unique_ptr<ClusterJob> ClusterJob::open(const HostPort& head, std::chrono::milliseconds heartbeat_timeout) {
  std::unique_ptr<ClusterJob> j(new ClusterJob());
  j->head_address_ = head;
  j->heartbeat_timeout_ = heartbeat_timeout;
  const ClusterView view = read_cluster_view(head, std::chrono::seconds(10));
  j->link_ = comm::Store::tcp({head.host, head.port, false, heartbeat_timeout});
  for (const auto& n : view.nodes)
    if (n.alive) j->nodes_.push_back(n);
  if (j->nodes_.empty() || j->nodes_.front().id != 0) throw Error(fmt::format("the cluster at {} lists no head node", head.str()));
  j->id_.rank = 0;
  j->id_.world_size = static_cast<int>(j->nodes_.size());
  j->id_.master_addr = parse_host_port(view.head_address, "the head's address").host;
  j->id_.master_port = 0;
  j->id_.worker_id = fmt::format("{}:0", j->id_.master_addr);
  j->id_.rank_source = "cluster";
  log::info("Connected to the roll cluster at {}: {} live node(s)", head.str(), j->nodes_.size());
  return j;
}

ClusterJob::~ClusterJob() { end("the driver ended"); }

void ClusterJob::check_fits(const config::PlacementPlan& plan) const {
  if (plan.num_nodes > id_.world_size)
    throw Error(fmt::format("the placement uses {} nodes (device ids / num_gpus_per_node) but the cluster at {} has {} "
                            "live node(s): join more with `roll start --address={}`",
                            plan.num_nodes, head_address_.str(), id_.world_size, head_address_.str()));
  for (int k = 0; k < plan.num_nodes; ++k) {
    const NodeInfo& n = nodes_[static_cast<size_t>(k)].info;
    if (plan.devices_per_node > n.devices)
      throw Error(fmt::format("the placement uses {} device(s) per node (num_gpus_per_node) but {} (cluster node {}) "
                              "offers {} {} device(s)",
                              plan.devices_per_node, n.describe(), nodes_[static_cast<size_t>(k)].id, n.devices,
                              n.device_key));
  }
}

void ClusterJob::announce(const std::string& name, const config::PlacementPlan& plan, uint16_t store_port) {
  ClusterJobRecord r;
  r.id = job_ = static_cast<int>(link_->add(cluster_keys::kNextJob, 1)) - 1;
  r.driver_pid = getpid();
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) r.driver_host = host;
  r.name = name;
  std::map<int, std::set<int>> devices;  // node id -> local device ids
  for (const auto& n : nodes_) r.node_ids.push_back(n.id);
  for (const auto& c : plan.clusters) {
    if (!c.started) continue;
    for (const auto& w : c.workers) {
      const int id = nodes_.at(static_cast<size_t>(w.node)).id;
      r.workers[id].push_back(w.name);
      devices[id].insert(w.local_devices.begin(), w.local_devices.end());
    }
  }
  for (const auto& [id, d] : devices) r.devices[id] = static_cast<int>(d.size());
  link_->set(cluster_keys::job(r.id), r.to_json().dump());
  for (size_t k = 1; k < nodes_.size(); ++k) {
    const int id = nodes_[k].id;
    const int n = static_cast<int>(link_->add(cluster_keys::node_job_count(id), 1)) - 1;
    link_->set(cluster_keys::node_job(id, n),
               nlohmann::json{{"job", r.id}, {"rank", k}, {"world_size", id_.world_size},
                              {"master_addr", id_.master_addr}, {"master_port", store_port}}.dump());
  }
  log::info("job {} announced to the cluster: {} node(s), store at {}:{}", r.id, nodes_.size(), id_.master_addr,
            store_port);
  // Its own connection: the beats must not wait behind the driver's store calls.
  beats_ = std::thread([this, link = comm::Store::tcp({head_address_.host, head_address_.port, false,
                                                       heartbeat_timeout_})] {
    while (!ended_) {
      try {
        link->add(cluster_keys::job_heartbeat(job_), 1);
      } catch (const std::exception& e) {
        log::warn("job {}: the cluster head at {} does not answer: {}", job_, head_address_.str(), e.what());
      }
      for (int i = 0; i < 10 && !ended_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
}

void ClusterJob::end(const std::string& how) {
  if (ended_.exchange(true)) return;
  if (beats_.joinable()) beats_.join();
  if (job_ < 0) return;
  try {
    link_->set(cluster_keys::job_ended(job_), how);
  } catch (const std::exception& e) {
    log::warn("job {}: could not tell the cluster head that the job ended: {}", job_, e.what());
  }
}

}  // namespace roll::runtime
