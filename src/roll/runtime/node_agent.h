#pragma once
// A node agent (nodes 1..WORLD_SIZE-1 of a multi-node job; docs/design.md section 3): after joining, it
// starts the workers the head asks for (with the head's WorkerLaunch variables over this node's
// environment), reports their pids and exits, bumps this node's heartbeat, and watches the head's.
// It returns 0 when the head reports success, non-zero with the reason when the head reports a
// failure, goes away, or stops beating for ROLL_HEARTBEAT_TIMEOUT; its workers never outlive it.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "roll/runtime/node_identity.h"

namespace roll::comm {
class Store;
}

namespace roll::runtime {

struct NodeAgentOptions {
  std::vector<std::string> worker_command;  // e.g. {"/path/roll", "worker"}
  std::chrono::milliseconds heartbeat_timeout{std::chrono::seconds(60)};
  bool forward_output = true;
  // Called with the names of the workers running now whenever that set changes (a manual
  // cluster's agent reports them to its head for `roll status`).
  std::function<void(const std::vector<std::string>&)> on_workers;
};

// `store`: the connection wait_for_head made (this node has joined already).
int run_node_agent(const NodeIdentity& id, const std::shared_ptr<comm::Store>& store, const NodeAgentOptions& options);

}  // namespace roll::runtime
