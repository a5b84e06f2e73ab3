#pragma once
// The driver-side proxy of one role (ROLL's Cluster, docs/runtime.md): N worker processes, one per rank,
// each behind an RpcClient. Calls go out with a dispatch mode and come back as a ClusterFuture.
// A worker that exits fails every call pending on it, and every later one, with its name, rank,
// node, exit status and last log lines (docs/design.md section 3).
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "roll/config/placement.h"
#include "roll/runtime/dispatch.h"
#include "roll/runtime/rpc_client.h"

namespace roll::runtime {

class Runtime;
class WorkerProcess;

class ClusterFuture {
 public:
  ClusterFuture() = default;
  ClusterFuture(std::string what, Dispatch mode, std::vector<std::future<Payload>> parts, int64_t pad,
                std::chrono::milliseconds timeout);
  // The result by the dispatch mode (rank 0's, or the concatenated Batch). Waits; errors and
  // timeouts are roll::Errors naming the cluster, worker and method.
  Payload get();
  // Every rank's result, rank order.
  std::vector<Payload> get_all();
  bool valid() const { return !parts_.empty(); }

 private:
  std::string what_;
  Dispatch mode_ = Dispatch::one_to_all;
  std::vector<std::future<Payload>> parts_;
  int64_t pad_ = 0;
  std::chrono::milliseconds timeout_{0};
};

struct ClusterSpec {
  config::ClusterPlacement placement;
  std::string role;                                   // registered role name
  nlohmann::json options = nlohmann::json::object();  // given to every worker (WorkerContext::options)
  int devices_per_node = 1;
};

class Cluster {
 public:
  const std::string& name() const { return spec_.placement.name; }
  int world_size() const { return static_cast<int>(workers_.size()); }
  const ClusterSpec& spec() const { return spec_; }

  ClusterFuture call(const std::string& method, Dispatch mode, const Payload& args = {});
  // ALL_TO_ALL: one argument set per rank.
  ClusterFuture call_each(const std::string& method, std::vector<Payload> per_rank);
  // One rank only (for example the rank a router picked).
  std::future<Payload> call_rank(int rank, const std::string& method, Payload args = {});

  // Published endpoint of a rank (services: any process with the store can connect to it).
  const std::string& endpoint(int rank) const;
  pid_t pid(int rank) const;
  // "actor_train-1 (cluster actor_train, rank 1, node 0, pid 4242)"
  std::string describe(int rank) const;
  // Nullopt while every worker runs; else why the first dead one ended, with its last lines.
  std::optional<std::string> failure() const;
  // For the hang watchdog and the dashboard, from any thread (docs/runtime.md, "Hang watchdog").
  struct RankActivity {
    pid_t pid = 0;
    bool on_this_node = true;
    bool running = false;  // the process runs (false once it exited or the cluster stopped)
    // The driver's calls in flight on this rank (not __ ones), its own and those of the clients
    // from connect(); the latter's ids carry the client's index in their top 16 bits (ids are
    // per client), so every call has its own id.
    std::vector<RpcClient::PendingCall> calls;
  };
  RankActivity activity(int rank) const;
  // How long the answered calls of `method` took on every rank, in seconds.
  std::vector<double> completed_seconds(const std::string& method) const;
  // Calls a built-in method (__stacks, __busy) on `rank` and waits up to `timeout`; nullopt when
  // the worker does not answer in time or the cluster stopped.
  std::optional<Payload> ask(int rank, const std::string& method, std::chrono::milliseconds timeout,
                             Payload args = {});

  // A further client of rank's endpoint (the request router's own connections). It fails with
  // this cluster's calls when a worker is lost: a link that goes down sends no reset, so a
  // client the cluster did not know would wait for answers until its own timeout.
  std::shared_ptr<RpcClient> connect(int rank);

  // Asks every worker to stop, then signals those that do not (no orphans).
  void shutdown(std::chrono::milliseconds grace = std::chrono::milliseconds(3000));
  ~Cluster();

 private:
  friend class Runtime;
  Cluster(Runtime& runtime, ClusterSpec spec);
  void launch();                                     // spawns every rank
  void wait_ready(std::chrono::milliseconds timeout);  // every endpoint published, or fails naming the worker
  void on_worker_exit(int rank, const std::string& how);
  void fail_calls(const std::string& reason);  // every pending and later call (a lost node)
  void fail_locked(const std::string& reason);  // under mu_
  RpcClient& client(int rank, const std::string& method);  // roll::Error once shut down

  struct Worker {
    std::shared_ptr<WorkerProcess> process;  // a ChildProcess, or a RemoteWorker on another node
    std::unique_ptr<RpcClient> client;
    std::string endpoint;
  };

  Runtime& runtime_;
  ClusterSpec spec_;
  std::vector<Worker> workers_;
  // From connect(), with their rank: failed with the cluster, and their calls (the router's
  // generate requests) count in activity() and completed_seconds() for the hang watchdog.
  std::vector<std::pair<int, std::weak_ptr<RpcClient>>> extra_clients_;
  mutable std::mutex mu_;
  std::optional<std::string> failure_;
  bool stopping_ = false;
  std::chrono::milliseconds rpc_timeout_;
};

}  // namespace roll::runtime
