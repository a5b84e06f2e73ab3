// Node identity from the environment (docs/runtime.md): Method A's variables, mpirun's and srun's, Slurm's
// compressed host lists, and the node's own address (never the hostname's).
#include <gtest/gtest.h>

#include <map>

#include "roll/core/error.h"
#include "roll/runtime/node_identity.h"

using namespace roll::runtime;

namespace {

roll::comm::EnvLookup fake(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string error_of(const std::map<std::string, std::string>& vars) {
  try {
    node_identity(fake(vars));
  } catch (const roll::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(RuntimeNodeIdentity, DefaultsAreSpecSeven) {
  NodeIdentity id = node_identity(fake({}));
  EXPECT_EQ(id.rank, 0);
  EXPECT_EQ(id.world_size, 1);
  EXPECT_EQ(id.master_addr, "127.0.0.1");
  EXPECT_EQ(id.master_port, 6379);
  EXPECT_EQ(id.dashboard_port, 8265);
  EXPECT_EQ(id.worker_id, "127.0.0.1:0");
  EXPECT_EQ(id.rank_source, "default");
  EXPECT_FALSE(id.multi_node());
}

TEST(RuntimeNodeIdentity, MethodAVariables) {
  NodeIdentity id = node_identity(fake({{"RANK", "1"}, {"WORLD_SIZE", "3"}, {"MASTER_ADDR", "10.0.0.1"},
                                        {"MASTER_PORT", "29400"}, {"DASHBOARD_PORT", "9000"}}));
  EXPECT_EQ(id.rank, 1);
  EXPECT_EQ(id.world_size, 3);
  EXPECT_EQ(id.master_addr, "10.0.0.1");
  EXPECT_EQ(id.master_port, 29400);
  EXPECT_EQ(id.dashboard_port, 9000);
  EXPECT_EQ(id.worker_id, "10.0.0.1:1");
  EXPECT_EQ(id.rank_source, "RANK");
  EXPECT_TRUE(id.multi_node());
  EXPECT_FALSE(id.head());
  EXPECT_EQ(node_identity(fake({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"WORKER_ID", "n0"}})).worker_id, "n0");
}

TEST(RuntimeNodeIdentity, RankWinsOverMpiAndSlurm) {
  NodeIdentity id = node_identity(fake({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "1"},
                                        {"OMPI_COMM_WORLD_SIZE", "4"}, {"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}}));
  EXPECT_EQ(id.rank, 0);
  EXPECT_EQ(id.world_size, 2);
}

TEST(RuntimeNodeIdentity, OpenMpiRanksWhenRankIsAbsent) {
  NodeIdentity id = node_identity(fake({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                        {"MASTER_ADDR", "head"}, {"SLURM_PROCID", "0"}}));
  EXPECT_EQ(id.rank, 2);
  EXPECT_EQ(id.world_size, 4);
  EXPECT_EQ(id.rank_source, "OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(id.master_addr, "head");
}

TEST(RuntimeNodeIdentity, SlurmRanksAndTheFirstHostAsMaster) {
  NodeIdentity id = node_identity(
      fake({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "4"}, {"SLURM_NODELIST", "gpu[07-09,12],cpu1"}}));
  EXPECT_EQ(id.rank, 1);
  EXPECT_EQ(id.world_size, 4);
  EXPECT_EQ(id.rank_source, "SLURM_PROCID");
  EXPECT_EQ(id.master_addr, "gpu07");
  // An explicit MASTER_ADDR wins over the node list.
  EXPECT_EQ(node_identity(fake({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_NODELIST", "a[1-2]"},
                                {"MASTER_ADDR", "10.9.9.9"}}))
                .master_addr,
            "10.9.9.9");
}

TEST(RuntimeNodeIdentity, ExpandsSlurmNodeLists) {
  using V = std::vector<std::string>;
  EXPECT_EQ(expand_slurm_nodelist("node[01-03,07]"), (V{"node01", "node02", "node03", "node07"}));
  EXPECT_EQ(expand_slurm_nodelist("a1,b[8-10],c"), (V{"a1", "b8", "b9", "b10", "c"}));
  EXPECT_EQ(expand_slurm_nodelist("r[1-2]-ib"), (V{"r1-ib", "r2-ib"}));
  EXPECT_EQ(expand_slurm_nodelist("solo"), (V{"solo"}));
  EXPECT_THROW(expand_slurm_nodelist("n[1-3"), roll::Error);
  EXPECT_THROW(expand_slurm_nodelist("n[3-1]"), roll::Error);
  EXPECT_THROW(expand_slurm_nodelist("n[a-b]"), roll::Error);
}

TEST(RuntimeNodeIdentity, ErrorsNameTheVariable) {
  EXPECT_NE(error_of({{"RANK", "x"}, {"WORLD_SIZE", "2"}}).find("RANK='x'"), std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "0"}}).find("WORLD_SIZE='0'"), std::string::npos);
  EXPECT_NE(error_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}}).find("RANK=2 is not below WORLD_SIZE=2"), std::string::npos);
  EXPECT_NE(error_of({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "2"}}).find("OMPI_COMM_WORLD_SIZE=2"),
            std::string::npos);
  EXPECT_NE(error_of({{"MASTER_PORT", "70000"}}).find("MASTER_PORT"), std::string::npos);
  EXPECT_NE(error_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_NODELIST", "n[1-"}}).find("SLURM_NODELIST"),
            std::string::npos);
}

TEST(RuntimeNodeIdentityAddress, SingleNodeIsLoopback) {
  NodeAddress a = node_address(fake({}), NodeIdentity{});
  EXPECT_EQ(a.address, "127.0.0.1");
}

TEST(RuntimeNodeIdentityAddress, NamedAddressOrInterfaceWins) {
  NodeIdentity id;
  id.world_size = 2;
  id.master_addr = "10.255.255.1";
  EXPECT_EQ(node_address(fake({{"HCCL_IF_IP", "10.1.1.7"}}), id).address, "10.1.1.7");
  // The loopback interface exists everywhere: named by GLOO/NCCL/HCCL, its own address is used.
  for (const char* var : {"GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME"}) {
    NodeAddress a = node_address(fake({{var, "lo"}}), id);
    EXPECT_EQ(a.address, "127.0.0.1") << var;
    EXPECT_EQ(a.source, var);
  }
  try {
    node_address(fake({{"NCCL_SOCKET_IFNAME", "=no-such-if0"}}), id);
    FAIL() << "expected an error";
  } catch (const roll::Error& e) {
    EXPECT_NE(std::string(e.what()).find("NCCL_SOCKET_IFNAME"), std::string::npos) << e.what();
  }
  // The runtime's variable for workers does not decide the node's address.
  EXPECT_EQ(node_address(fake({{"ROLL_BIND_HOST", "10.3.3.3"}, {"HCCL_IF_IP", "10.1.1.7"}}), id).address, "10.1.1.7");
}

TEST(RuntimeNodeIdentityAddress, RoutesTowardsTheMasterWithoutAVariable) {
  NodeIdentity id;
  id.world_size = 2;
  id.master_addr = "127.0.0.1";  // the kernel's source address towards loopback is loopback
  NodeAddress a = node_address(fake({}), id);
  EXPECT_EQ(a.address, "127.0.0.1");
  EXPECT_NE(a.source.find("route to MASTER_ADDR"), std::string::npos);
}
