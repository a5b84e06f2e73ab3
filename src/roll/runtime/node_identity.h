#pragma once
// Who this node is in a multi-node job (docs/runtime.md; docs/design.md section 3): its rank among the nodes, how
// many nodes there are and where the head is, read from RANK / WORLD_SIZE / MASTER_ADDR /
// MASTER_PORT (the seed's Method A), else from mpirun's OMPI_COMM_WORLD_* or srun's SLURM_*; and
// the address other nodes reach it at. Pure functions of an environment lookup.
#include <cstdint>
#include <string>
#include <vector>

#include "roll/comm/gloo_device.h"

namespace roll::runtime {

struct NodeIdentity {
  int rank = 0;        // node rank; 0 is the head
  int world_size = 1;  // number of nodes
  std::string master_addr = "127.0.0.1";
  uint16_t master_port = 6379;     // the rendezvous store (Ray's GCS port in the seed)
  uint16_t dashboard_port = 8265;  // where the jobs of this cluster serve their dashboard (docs/dashboard.md)
  std::string worker_id;           // WORKER_ID, default "<MASTER_ADDR>:<RANK>"
  std::string rank_source;         // RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID or default

  bool multi_node() const { return world_size > 1; }
  bool head() const { return rank == 0; }
};

// Throws roll::Error naming the variable that is malformed or inconsistent (rank >= world size).
NodeIdentity node_identity(const comm::EnvLookup& env);

// Slurm's compressed host list: "node[01-03,07],gpu5" -> node01 node02 node03 node07 gpu5.
// Throws roll::Error (naming SLURM_NODELIST) on an unbalanced or malformed range.
std::vector<std::string> expand_slurm_nodelist(const std::string& list);

// The IPv4 address this node's workers bind to and other nodes connect to: the interface or
// address named by GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME, HCCL_SOCKET_IFNAME or HCCL_IF_IP; else
// the source address the kernel picks towards MASTER_ADDR; 127.0.0.1 on a single node. Never what
// the hostname resolves to.
struct NodeAddress {
  std::string address;
  std::string source;  // the variable it came from, or "route to MASTER_ADDR", or "single node"
};
NodeAddress node_address(const comm::EnvLookup& env, const NodeIdentity& id);

}  // namespace roll::runtime
