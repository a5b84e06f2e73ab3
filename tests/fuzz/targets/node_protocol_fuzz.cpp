// What a node reads from the cluster store and the daemon's record file: a node's info (part 1),
// a spawn request (part 2), a daemon record (part 3) and a host:port flag (part 4).
#include <nlohmann/json.hpp>

#include "../fuzz_target.h"
#include "roll/core/error.h"
#include "roll/runtime/cluster_state.h"
#include "roll/runtime/node_protocol.h"

ROLL_FUZZ_TARGET(node_protocol) {
  const auto parts = roll::fuzz::split_parts(bytes, 4);
  try {
    (void)roll::runtime::NodeInfo::parse(std::string(parts[0]), "nodes/0").describe();
  } catch (const roll::Error&) {
  }
  try {
    (void)roll::runtime::SpawnRequest::parse(std::string(parts[1]), "nodes/0/spawn/0");
  } catch (const roll::Error&) {
  }
  try {
    (void)roll::runtime::parse_daemon_record(std::string(parts[2]), "daemon.json");
  } catch (const roll::Error&) {
  }
  (void)roll::runtime::parse_host_port(std::string(parts[3]), "--address");
}
