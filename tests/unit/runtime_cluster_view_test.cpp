// The view a manual cluster's head publishes and `roll status`'s report of it.
#include <gtest/gtest.h>

#include "roll/core/error.h"
#include "roll/runtime/cluster_view.h"

using namespace roll::runtime;

namespace {

ClusterView two_nodes() {
  ClusterView v;
  v.head_address = "10.0.0.1:6379";
  v.dashboard_port = 8265;
  v.heartbeat_timeout_s = 3;
  ClusterView::Node h, a, lost;
  h.id = 0, h.info.address = "10.0.0.1", h.info.hostname = "n0", h.info.devices = 2, h.info.cores = 8;
  a.id = 1, a.info.rank = 1, a.info.address = "10.0.0.2", a.info.hostname = "n1", a.info.devices = 1, a.info.cores = 4;
  a.workers = {"actor_infer-0-G0", "reference-0-G0"};
  lost.id = 2, lost.info.rank = 2, lost.info.address = "10.0.0.3", lost.info.devices = 4, lost.alive = false;
  lost.silent_s = 7.25;
  h.workers = {"actor_train-0-G0"};
  v.nodes = {h, a, lost};
  ClusterJobRecord j;
  j.id = 4, j.driver_pid = 777, j.name = "rlvr demo", j.node_ids = {0, 1};
  j.devices = {{0, 1}, {1, 1}};
  j.workers = {{0, {"actor_train-0-G0"}}, {1, {"actor_infer-0-G0", "reference-0-G0"}}};
  v.jobs = {j};
  return v;
}

}  // namespace

TEST(RuntimeClusterView, RoundTripsAsJson) {
  const ClusterView v = two_nodes();
  const ClusterView w = ClusterView::from_json(nlohmann::json::parse(v.to_json().dump()));
  EXPECT_EQ(w.to_json(), v.to_json());
  EXPECT_EQ(w.jobs.at(0).workers.at(1).size(), 2u);
  EXPECT_EQ(w.used_devices(0), 1);
  EXPECT_EQ(w.used_devices(2), 0);
}

TEST(RuntimeClusterView, MalformedViewIsAnError) {
  EXPECT_THROW(ClusterView::from_json(nlohmann::json::parse(R"({"nodes": []})")), roll::Error);
  EXPECT_THROW(ClusterView::from_json(nlohmann::json::parse(R"({"head_address": "a:1", "nodes": [{"id": 0}], "jobs": []})")),
               roll::Error);
}

TEST(RuntimeClusterView, StatusReportInRaysShape) {
  const std::string s = format_cluster_status(two_nodes(), "2026-12-01 13:00:00");
  const std::string rule(63, '-');
  EXPECT_EQ(s,
            "======== Cluster status: 2026-12-01 13:00:00 ========\n"
            "Head: 10.0.0.1:6379 (a job's dashboard on port 8265)\n"
            "Node status\n" + rule + "\n"
            "Active:\n"
            " node 0 (head) 10.0.0.1 host n0: 2 CPU device(s), 8 cores; workers: actor_train-0-G0\n"
            " node 1 10.0.0.2 host n1: 1 CPU device(s), 4 cores; workers: actor_infer-0-G0, reference-0-G0\n"
            "Lost:\n"
            " node 2 10.0.0.3: 4 CPU device(s), 0 cores; workers: (none) (no heartbeat for 7.2 s)\n"
            "\nResources\n" + rule + "\n"
            "Usage:\n"
            " 2/3 CPU device(s) used, 1 free\n"
            " 12 cores\n"
            "Per node:\n"
            " node 0: 1/2 CPU device(s) used, 1 free\n"
            " node 1: 1/1 CPU device(s) used, 0 free\n"
            "\nJobs\n" + rule + "\n"
            " job 4: rlvr demo (driver pid 777) on nodes 0, 1\n");
}

TEST(RuntimeClusterView, IdleClusterSaysSo) {
  ClusterView v = two_nodes();
  v.jobs.clear();
  v.nodes.pop_back();
  v.nodes[0].workers.clear();
  v.nodes[1].workers.clear();
  const std::string s = format_cluster_status(v, "t");
  EXPECT_NE(s.find(" node 1 10.0.0.2 host n1: 1 CPU device(s), 4 cores; workers: (none)\n"), std::string::npos);
  EXPECT_NE(s.find("Lost:\n (no lost nodes)\n"), std::string::npos);
  EXPECT_NE(s.find(" 0/3 CPU device(s) used, 3 free\n"), std::string::npos);
  EXPECT_NE(s.find(" (no running jobs)\n"), std::string::npos);
}
