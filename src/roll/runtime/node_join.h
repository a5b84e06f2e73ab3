#pragma once
// Joining a multi-node job (docs/runtime.md, the seed's Method A): the head hosts the store at
// MASTER_PORT; every other node waits for it (a TCP probe every 2 s up to ROLL_HEAD_WAIT_TIMEOUT),
// connects, and registers; then every node logs the seed's progress line each second until
// WORLD_SIZE nodes are in, and the cluster's resources.
#include <chrono>
#include <memory>
#include <vector>

#include "roll/runtime/node_identity.h"
#include "roll/runtime/node_protocol.h"

namespace roll::comm {
class Store;
}

namespace roll::runtime {

// This node as it registers: its address (node_address), hostname, cores, and the devices given.
NodeInfo this_node(const NodeIdentity& id, int devices, const std::string& device_key);

// ROLL_HEAD_WAIT_TIMEOUT (seconds, default 600) and ROLL_HEARTBEAT_TIMEOUT (default 60);
// errors name the variable.
std::chrono::milliseconds head_wait_timeout(const comm::EnvLookup& env);
std::chrono::milliseconds heartbeat_timeout(const comm::EnvLookup& env);

// Head: hosts the store on every interface at MASTER_PORT (0: a free port). Errors name the port.
std::shared_ptr<comm::Store> host_head_store(const NodeIdentity& id);
// Other nodes: waits for the head (logging as the seed does), then connects. The error after
// `timeout` names MASTER_ADDR:MASTER_PORT. `op_timeout` bounds each store operation later (a
// dead link surfaces as an error, not a hang).
std::shared_ptr<comm::Store> wait_for_head(const NodeIdentity& id, std::chrono::milliseconds timeout,
                                           std::chrono::milliseconds op_timeout);

// Registers `self`, then waits (no timeout, as the seed; or up to `timeout` when it is positive:
// a manual cluster's nodes are known to be up) until every node joined; returns them in rank
// order. Errors name a node whose RANK is taken twice or whose WORLD_SIZE differs.
std::vector<NodeInfo> join_nodes(comm::Store& store, const NodeInfo& self,
                                 std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

}  // namespace roll::runtime
