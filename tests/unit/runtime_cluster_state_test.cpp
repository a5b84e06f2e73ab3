// The state files of a manual cluster (`roll start`): HOST:PORT parsing, the record's round trip
// and the errors that name the file and key at fault.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "roll/core/error.h"
#include "roll/runtime/cluster_state.h"

using namespace roll::runtime;

namespace {
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const roll::Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST(RuntimeClusterState, HostPortParses) {
  HostPort a = parse_host_port("10.0.0.1:6379", "--address");
  EXPECT_EQ(a.host, "10.0.0.1");
  EXPECT_EQ(a.port, 6379);
  EXPECT_EQ(a.str(), "10.0.0.1:6379");
  EXPECT_EQ(parse_host_port("head-node:1", "x").host, "head-node");
}

TEST(RuntimeClusterState, HostPortErrorsNameTheFlag) {
  EXPECT_NE(error_of([] { parse_host_port("10.0.0.1", "--address"); }).find("--address='10.0.0.1' is not HOST:PORT"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_host_port(":6379", "ROLL_ADDRESS"); }).find("ROLL_ADDRESS"), std::string::npos);
  EXPECT_NE(error_of([] { parse_host_port("h:65536", "--address"); }).find("port '65536'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_host_port("h:0", "--address"); }).find("port '0'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_host_port("h:63x", "--address"); }).find("port '63x'"), std::string::npos);
}

TEST(RuntimeClusterState, RecordRoundTripsThroughTheStateDir) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("roll-cluster-state-" + std::to_string(getpid())))
                              .string();
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(read_daemon_record(dir, DaemonRole::head));
  DaemonRecord h;
  h.role = DaemonRole::head, h.pid = 1234, h.address = "10.0.0.1:6379", h.dashboard_port = 8265, h.log_file = "/x/head.log";
  write_daemon_record(dir, h);
  DaemonRecord a;
  a.role = DaemonRole::agent, a.pid = 99, a.address = "10.0.0.1:6379", a.node_id = 3;
  write_daemon_record(dir, a);
  auto h2 = read_daemon_record(dir, DaemonRole::head);
  ASSERT_TRUE(h2);
  EXPECT_EQ(daemon_record_json(*h2), daemon_record_json(h));
  EXPECT_EQ(h2->dashboard_port, 8265);
  auto a2 = read_daemon_record(dir, DaemonRole::agent);
  ASSERT_TRUE(a2);
  EXPECT_EQ(a2->node_id, 3);
  EXPECT_EQ(state_file(dir, DaemonRole::agent), dir + "/agent.json");
  remove_daemon_record(dir, DaemonRole::head);
  EXPECT_FALSE(read_daemon_record(dir, DaemonRole::head));
  // An agent record in the head's file is an error naming the file.
  std::ofstream(state_file(dir, DaemonRole::head)) << daemon_record_json(a);
  EXPECT_NE(error_of([&] { read_daemon_record(dir, DaemonRole::head); }).find(dir + "/head.json: role 'agent'"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(RuntimeClusterState, MalformedRecordsNameFileAndKey) {
  EXPECT_NE(error_of([] { parse_daemon_record("{", "/s/head.json"); }).find("/s/head.json: not JSON"), std::string::npos);
  EXPECT_NE(error_of([] { parse_daemon_record(R"({"role":"head","address":"a:1"})", "/s/head.json"); })
                .find("/s/head.json: key 'pid' is missing"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_daemon_record(R"({"role":"boss","pid":1,"address":"a:1"})", "f"); })
                .find("role 'boss'"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_daemon_record(R"({"role":"head","pid":"x","address":"a:1"})", "f"); })
                .find("f: pid is \"x\", not an integer"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_daemon_record(R"({"role":"head","pid":9e40,"address":"a:1"})", "f"); })
                .find("f: pid is 9e+40, not an integer"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_daemon_record(R"({"role":"head","pid":1,"address":"a:1","log_file":3})", "f"); })
                .find("f: a value has the wrong type"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_daemon_record(R"({"role":"head","pid":5,"address":"a"})", "f"); })
                .find("f: address='a' is not HOST:PORT"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_daemon_record(R"({"role":"agent","pid":5,"address":"a:1"})", "f"); })
                .find("key 'node_id' is missing"),
            std::string::npos);
}

TEST(RuntimeClusterState, LiveRollProcessesOnly) {
  // This test binary is not named `roll`: a pid that is alive but another program is not a daemon.
  EXPECT_FALSE(roll_process_alive(getpid()));
  EXPECT_FALSE(roll_process_alive(0x3fffffff));
}

TEST(RuntimeClusterState, ClusterDirFromTheEnvironment) {
  EXPECT_EQ(cluster_dir([](const std::string&) { return std::optional<std::string>{}; }), "/tmp/rollcpp");
  EXPECT_EQ(cluster_dir([](const std::string& k) {
              return k == "ROLL_CLUSTER_DIR" ? std::optional<std::string>("/d") : std::nullopt;
            }),
            "/d");
}
