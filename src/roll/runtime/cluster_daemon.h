#pragma once
// The daemons of a manual cluster (the seed's Method B, `roll start`; docs/design.md section 3).
// The head daemon hosts the cluster's store at --port on every interface, takes node joins at any
// time, watches their heartbeats and the running jobs, and publishes the ClusterView. A node
// agent joins the head, registers its address and devices, heartbeats, and serves the jobs the
// head's pipelines give it one after another, each through Method A's node agent
// (run_node_agent), so a job's workers end with the job. Both write their state file, tell the
// `roll start` that launched them when they are ready, and run until SIGTERM (`roll stop`); an
// agent also ends when the head stops or stops beating for ROLL_HEARTBEAT_TIMEOUT.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "roll/runtime/cluster_state.h"

namespace roll::runtime {

struct DaemonOptions {
  std::string state_dir;      // cluster_dir()
  std::string log_file;       // recorded in the state file
  int ready_fd = -1;          // `roll start`'s pipe: "ready <message>" or "error <message>", then closed
  int devices = 0;            // offered to the cluster
  std::string device_key = "CPU";
  std::chrono::milliseconds heartbeat_timeout{std::chrono::seconds(60)};
  std::chrono::milliseconds head_wait_timeout{std::chrono::seconds(600)};  // agent
  std::vector<std::string> worker_command;  // agent: {"/path/roll", "worker"}
};

struct HeadDaemonOptions : DaemonOptions {
  uint16_t port = 6379;
  uint16_t dashboard_port = 8265;  // head: where its jobs serve their dashboard
  std::string node_ip;             // --node-ip-address; else the interface variables, else the first interface
};
int run_head_daemon(const HeadDaemonOptions& options);

struct AgentDaemonOptions : DaemonOptions {
  HostPort head;
};
int run_agent_daemon(const AgentDaemonOptions& options);

// The address this machine offers as a head: `node_ip`, else what GLOO/NCCL/HCCL_SOCKET_IFNAME or
// HCCL_IF_IP name, else the first IPv4 address of an interface that is up and not loopback.
std::string head_node_address(const comm::EnvLookup& env, const std::string& node_ip);

}  // namespace roll::runtime
