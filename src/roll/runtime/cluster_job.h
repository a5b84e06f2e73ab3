#pragma once
// A pipeline run on a manual cluster (the seed's Method B: `roll start` daemons are up, the
// pipeline is started on the head machine only). The driver takes the cluster's live nodes as its
// job's nodes (WORLD_SIZE = nodes joined), hosts the job's store as Method A's head does, and
// gives every node agent the job; the agents then join it as Method A's nodes do. The job beats
// to the head daemon (so `roll status` lists it and the devices it uses) until it ends.
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "roll/config/placement.h"
#include "roll/runtime/cluster_state.h"
#include "roll/runtime/cluster_view.h"
#include "roll/runtime/node_identity.h"

namespace roll::comm {
class Store;
}

namespace roll::runtime {

// Where a pipeline finds a cluster: ROLL_ADDRESS=HOST:PORT (as RAY_ADDRESS; "local" means none),
// else the head recorded in this machine's state file when its daemon is alive; nullopt: none.
std::optional<HostPort> cluster_address(const comm::EnvLookup& env);

// The cluster's view as its head publishes it; roll::Error naming `head` when it cannot be reached.
ClusterView read_cluster_view(const HostPort& head, std::chrono::milliseconds timeout);

class ClusterJob {
 public:
  // Connects to the head daemon and takes its live nodes (the head first).
  static std::unique_ptr<ClusterJob> open(const HostPort& head, std::chrono::milliseconds heartbeat_timeout);
  ~ClusterJob();  // end("") if not ended
  ClusterJob(const ClusterJob&) = delete;
  ClusterJob& operator=(const ClusterJob&) = delete;

  // This driver as node 0 of the job: WORLD_SIZE = the live nodes, MASTER_ADDR = the head's
  // address, MASTER_PORT 0 (the job's store takes a free port).
  const NodeIdentity& identity() const { return id_; }
  const ClusterView::Node& head() const { return nodes_.front(); }
  // roll::Error when `plan` needs more nodes, or more devices on a node, than the cluster has.
  void check_fits(const config::PlacementPlan& plan) const;
  // Tells the head and every agent about the job, whose store listens at `store_port`.
  void announce(const std::string& name, const config::PlacementPlan& plan, uint16_t store_port);
  void end(const std::string& how);

 private:
  ClusterJob() = default;
  HostPort head_address_;
  std::chrono::milliseconds heartbeat_timeout_{60000};
  std::shared_ptr<comm::Store> link_;
  std::vector<ClusterView::Node> nodes_;  // job rank k is nodes_[k]
  NodeIdentity id_;
  int job_ = -1;
  std::atomic<bool> ended_{false};
  std::thread beats_;
};

}  // namespace roll::runtime
