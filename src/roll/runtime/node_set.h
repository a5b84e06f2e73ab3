#pragma once
// The head's view of a multi-node job (docs/design.md section 3): the store it hosts, every node that
// joined, and a monitor thread that bumps the head's heartbeat, watches every node's heartbeat,
// and relays what the node agents report about the workers they started for the head (pid,
// exit). A node whose heartbeat stops for ROLL_HEARTBEAT_TIMEOUT is lost: each of its workers
// ends with a reason that names the node, which fails the job as a worker exit does.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "roll/runtime/node_identity.h"
#include "roll/runtime/node_protocol.h"
#include "roll/runtime/worker_process.h"

namespace roll::comm {
class Store;
}

namespace roll::runtime {

class RemoteWorker;

class NodeSet {
 public:
  // Hosts the store at MASTER_PORT (or takes `store`, hosted already: a manual cluster's job
  // tells its nodes the port first), registers the head, waits until every node joined.
  static std::shared_ptr<NodeSet> start_head(const NodeIdentity& id, const NodeInfo& self,
                                             std::chrono::milliseconds heartbeat_timeout,
                                             std::shared_ptr<comm::Store> store = nullptr,
                                             std::chrono::milliseconds join_timeout = std::chrono::milliseconds(0));
  ~NodeSet();  // stops the monitor
  NodeSet(const NodeSet&) = delete;
  NodeSet& operator=(const NodeSet&) = delete;

  const NodeIdentity& identity() const { return id_; }
  const std::shared_ptr<comm::Store>& store() const { return store_; }  // the head's (server) store
  const NodeInfo& node(int rank) const;  // roll::Error for a rank outside the job
  int size() const { return static_cast<int>(nodes_.size()); }

  // Asks node `rank`'s agent to start a worker; `on_exit` runs once when it has ended (from the
  // monitor thread, or from stop() when the agent no longer answers).
  std::shared_ptr<WorkerProcess> spawn(int rank, SpawnRequest request,
                                       std::function<void(const std::string&)> on_exit);

  // Called (from the monitor thread) with the reason when a node is lost, after its workers ended:
  // a lost node fails every pending call of the job, not only those of its workers' clusters
  // (a peer of theirs may be waiting in a collective that can no longer finish). Null to clear.
  void on_node_lost(std::function<void(const std::string&)> callback);

  // When `error` names the address of a node other than the head (a collective's "connection
  // closed by peer [A]:port" usually comes before the heartbeat timeout), waits up to the
  // heartbeat timeout for that node to be declared lost and returns "node K (...) was lost: ...";
  // nullopt when no such node is named or it keeps beating. Lets the job's error name the node.
  std::optional<std::string> lost_node_named_in(const std::string& error);

  // The end of the job, told to every agent; waits a moment for them to see it.
  void finish(bool ok, const std::string& reason);

 private:
  friend class RemoteWorker;
  NodeSet() = default;
  void monitor();
  void request_stop(const RemoteWorker& w, std::chrono::milliseconds grace);

  NodeIdentity id_;
  std::shared_ptr<comm::Store> store_;  // the server (Runtime and clusters use it)
  std::shared_ptr<comm::Store> link_;   // the monitor's own connection, under mu_
  std::vector<NodeInfo> nodes_;
  std::chrono::milliseconds heartbeat_timeout_{60000};

  std::mutex mu_;
  std::vector<std::weak_ptr<RemoteWorker>> workers_;
  std::vector<int> next_index_;  // per node: the next spawn index
  bool finished_ = false;
  int lost_ = 0;
  std::map<int, std::string> lost_why_;  // node rank -> "node K (...) was lost: ...", under mu_
  std::mutex lost_cb_mu_;  // held while the callback runs, so clearing it waits for a running one
  std::function<void(const std::string&)> lost_cb_;  // nodes whose heartbeat stopped (finish() does not wait for them)
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace roll::runtime
