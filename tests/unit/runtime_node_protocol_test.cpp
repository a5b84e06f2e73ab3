// What the head and node agents exchange through the store, and the seed's log lines.
#include <gtest/gtest.h>

#include "roll/runtime/node_protocol.h"

using namespace roll::runtime;

TEST(RuntimeNodeProtocol, SeedJoinProgressLine) {
  EXPECT_EQ(join_progress_line(1, 2), "1 nodes have joined so far, waiting for 1.");
  EXPECT_EQ(join_progress_line(2, 5), "2 nodes have joined so far, waiting for 3.");
}

TEST(RuntimeNodeProtocol, ClusterResourcesInRaysShape) {
  NodeInfo a, b;
  a.rank = 0, a.address = "10.0.0.1", a.cores = 8, a.devices = 8, a.device_key = "GPU";
  b.rank = 1, b.address = "10.0.0.2", b.cores = 16, b.devices = 8, b.device_key = "GPU";
  EXPECT_EQ(cluster_resources_line({a, b}),
            "Current cluster resources: {'CPU': 24.0, 'GPU': 16.0, 'node:10.0.0.1': 1.0, 'node:10.0.0.2': 1.0}");
  a.device_key = b.device_key = "CPU";  // CPU device slots are cores: not counted twice
  EXPECT_EQ(cluster_resources_line({a}), "Current cluster resources: {'CPU': 8.0, 'node:10.0.0.1': 1.0}");
}

TEST(RuntimeNodeProtocol, NodeInfoAndSpawnRequestRoundTrip) {
  NodeInfo n;
  n.rank = 3, n.world_size = 4, n.address = "10.1.2.3", n.worker_id = "w", n.hostname = "h", n.devices = 2, n.cores = 5;
  n.device_key = "NPU";
  NodeInfo m = NodeInfo::from_json(nlohmann::json::parse(n.to_json().dump()));
  EXPECT_EQ(m.to_json(), n.to_json());
  EXPECT_EQ(m.describe(), "node 3 (10.1.2.3, host h)");
  SpawnRequest r{"actor_infer-0-G0", {{"RANK", "0"}, {"ROLL_BIND_HOST", "10.1.2.3"}}};
  SpawnRequest s = SpawnRequest::from_json(nlohmann::json::parse(r.to_json().dump()));
  EXPECT_EQ(s.name, r.name);
  EXPECT_EQ(s.settings, r.settings);
  EXPECT_EQ(node_keys::spawn(1, 7), "nodes/1/spawn/7");
  EXPECT_EQ(node_keys::exit(2, 0), "nodes/2/exit/0");
}
