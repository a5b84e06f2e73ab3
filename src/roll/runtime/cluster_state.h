#pragma once
// The state files of a manual cluster (the seed's Method B; docs/design.md section 3): `roll start` writes
// one per daemon it leaves running on this machine (head.json, agent.json) under
// $ROLL_CLUSTER_DIR (default /tmp/rollcpp), so that `roll status`, `roll stop` and a pipeline run
// later on this machine find the cluster, as Ray's `ray status` finds its head.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "roll/comm/gloo_device.h"

namespace roll::runtime {

struct HostPort {
  std::string host;
  uint16_t port = 0;
  std::string str() const;  // "host:port"
};
// "10.0.0.1:6379" -> {10.0.0.1, 6379}. `what` names the flag or variable in the error.
HostPort parse_host_port(const std::string& text, const std::string& what);

enum class DaemonRole { head, agent };
const char* daemon_role_name(DaemonRole role);  // "head" | "agent"

struct DaemonRecord {
  DaemonRole role = DaemonRole::head;
  pid_t pid = 0;
  std::string address;  // the head's HOST:PORT (the one agents join)
  uint16_t dashboard_port = 0;  // head: where its jobs serve their dashboard
  int node_id = 0;              // agent: the id the head gave it
  std::string log_file;
};

// The record of a daemon that is this process.
DaemonRecord this_daemon(DaemonRole role, const std::string& address, const std::string& log_file);

std::string cluster_dir(const comm::EnvLookup& env);  // $ROLL_CLUSTER_DIR or /tmp/rollcpp
std::string state_file(const std::string& dir, DaemonRole role);

std::string daemon_record_json(const DaemonRecord& r);
// Throws roll::Error naming `source` (the file) and the key that is missing or malformed.
DaemonRecord parse_daemon_record(const std::string& text, const std::string& source);

// The record at `state_file(dir, role)`; nullopt when there is none. A malformed file is an error.
std::optional<DaemonRecord> read_daemon_record(const std::string& dir, DaemonRole role);
void write_daemon_record(const std::string& dir, const DaemonRecord& r);  // atomically (rename)
void remove_daemon_record(const std::string& dir, DaemonRole role);

// True while `pid` is a live (not zombie) process named `roll`: a recycled pid is not our daemon.
bool roll_process_alive(pid_t pid);

}  // namespace roll::runtime
