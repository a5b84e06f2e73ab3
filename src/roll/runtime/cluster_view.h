#pragma once
// What a manual cluster's head daemon (the seed's Method B) keeps in its store, and the view of
// the cluster it publishes there for `roll status` and for pipelines that use the cluster.
// Keys (all under "cluster/"):
//   cluster/heartbeat                the head daemon's counter, bumped every second
//   cluster/next_node                add: an agent's node id (1, 2, ...)
//   cluster/nodes/<id>               the agent's NodeInfo (JSON) plus "head_host": the host it joined at
//   cluster/nodes/<id>/heartbeat     the agent's counter
//   cluster/nodes/<id>/workers       the workers the agent runs now (JSON list of names)
//   cluster/nodes/<id>/job_count     add: how many jobs were given to the agent
//   cluster/nodes/<id>/jobs/<n>      its n-th job: {"job", "rank", "world_size", "master_addr", "master_port"}
//   cluster/next_job                 add: a job id
//   cluster/jobs/<j>                 a job (ClusterJobRecord JSON); .../heartbeat its driver's counter,
//                                    .../ended set when it ends
//   cluster/stop                     set when the head stops: agents exit; cluster/stop_acks counts them
//   cluster/view                     ClusterView JSON, rewritten by the head daemon every 0.5 s
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "roll/runtime/node_protocol.h"

namespace roll::runtime {

namespace cluster_keys {
inline constexpr const char* kHeartbeat = "cluster/heartbeat";
inline constexpr const char* kNextNode = "cluster/next_node";
std::string node(int id);
std::string node_heartbeat(int id);
std::string node_workers(int id);
std::string node_job_count(int id);
std::string node_job(int id, int n);
inline constexpr const char* kNextJob = "cluster/next_job";
std::string job(int j);
std::string job_heartbeat(int j);
std::string job_ended(int j);
inline constexpr const char* kStop = "cluster/stop";
inline constexpr const char* kStopAcks = "cluster/stop_acks";
inline constexpr const char* kView = "cluster/view";
}  // namespace cluster_keys

// A pipeline run on the cluster, as its driver announces it.
struct ClusterJobRecord {
  int id = 0;
  int driver_pid = 0;
  std::string driver_host;     // the driver's hostname: the head checks the pid when it is its own
  std::string name;            // "rlvr <exp_name>"
  std::vector<int> node_ids;   // job rank k runs on node_ids[k]; node_ids[0] == 0 (the head)
  std::map<int, int> devices;  // node id -> devices the job's placement uses there
  std::map<int, std::vector<std::string>> workers;  // node id -> the workers placed there
  nlohmann::json to_json() const;
  static ClusterJobRecord from_json(const nlohmann::json& j);
};

struct ClusterView {
  struct Node {
    int id = 0;  // 0 is the head
    NodeInfo info;
    bool alive = true;
    double silent_s = 0;               // seconds since its last heartbeat
    std::vector<std::string> workers;  // running now
  };
  std::string head_address;  // HOST:PORT agents join
  int dashboard_port = 0;
  double heartbeat_timeout_s = 60;
  std::vector<Node> nodes;
  std::vector<ClusterJobRecord> jobs;  // running

  nlohmann::json to_json() const;
  static ClusterView from_json(const nlohmann::json& j);  // roll::Error on a malformed view
  // Devices the running jobs use on node `id`.
  int used_devices(int id) const;
};

// `roll status`'s report, in the shape of `ray status`: node status (active / lost nodes, each
// with address, hostname, devices and its running workers), then resources (used/total, free),
// then the running jobs. `now` heads the report.
std::string format_cluster_status(const ClusterView& view, const std::string& now);

}  // namespace roll::runtime
