// The dashboard's pieces without a runtime: the run board (steps, ETA, metric rows, hung envs),
// the HTTP server's JSON (/api/state, /api/metrics?since, unknown workers, a taken port), the run
// records `roll status` reads, and the log tail.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "roll/core/error.h"
#include "roll/core/file_tail.h"
#include "roll/monitor/dashboard_server.h"
#include "roll/monitor/run_board.h"
#include "roll/monitor/run_record.h"
#include "roll/monitor/run_status.h"
#include "unit/multiprocess.h"

namespace roll::monitor {
namespace {

using namespace std::chrono_literals;

TEST(MonitorDashboard, RunBoardCountsStepsAndEstimatesTheRest) {
  RunBoard b("agentic", "exp", 4);
  EXPECT_EQ(b.run_json()["state"], "starting");
  b.set_running(0);
  b.step_started(0);
  EXPECT_EQ(b.run_json()["current_step"], 0);
  b.step_finished(0, {{"critic/score/mean", 0.5}}, {{"rollout", 1.5}, {"train", 0.5}}, 2.0);
  b.step_started(1);
  b.step_finished(1, {{"critic/score/mean", 0.7}, {"actor/pg_loss", 0.1}}, {{"rollout", 3.0}}, 4.0);
  const auto r = b.run_json();
  EXPECT_EQ(r["step"], 2);
  EXPECT_TRUE(r["current_step"].is_null());
  EXPECT_DOUBLE_EQ(r["last_step_wall_s"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(r["eta_s"].get<double>(), 3.0 * 2);  // mean 3 s x 2 steps left
  EXPECT_DOUBLE_EQ(r["last_step_times"]["rollout"].get<double>(), 3.0);
  EXPECT_EQ(b.metric_names(), (std::vector<std::string>{"actor/pg_loss", "critic/score/mean"}));
  const auto rows = b.metrics_since(1);
  ASSERT_EQ(rows["rows"].size(), 1u);
  EXPECT_EQ(rows["rows"][0]["step"], 1);
  EXPECT_EQ(rows["next"], 2);
  EXPECT_TRUE(b.metrics_since(2)["rows"].empty());
  b.set_hung_envs(nlohmann::json::array({{{"group_id", 0}, {"env_id", 3}}}));
  EXPECT_EQ(b.run_json()["hung_envs"][0]["env_id"], 3);
  b.set_failed("boom");
  EXPECT_EQ(b.run_json()["state"], "failed");
  EXPECT_EQ(b.run_json()["error"], "boom");
  EXPECT_TRUE(b.run_json()["eta_s"].is_null());
}

TEST(MonitorDashboard, ServesStateAndMetricsAndRefusesUnknownWorkers) {
  auto board = std::make_shared<RunBoard>("rlvr", "exp", 3);
  board->set_running(0);
  board->step_finished(0, {{"critic/score/mean", 0.25}}, {}, 1.0);
  DashboardOptions o;
  o.port = 0;
  DashboardServer server(o, board);
  ASSERT_GT(server.port(), 0);
  const auto state = fetch_dashboard_json(server.url(), "/api/state", 5s);
  EXPECT_EQ(state["run"]["pipeline"], "rlvr");
  EXPECT_EQ(state["run"]["step"], 1);
  EXPECT_EQ(state["run"]["pid"], static_cast<int64_t>(getpid()));
  EXPECT_TRUE(state["workers"].empty());  // no runtime attached
  EXPECT_EQ(state["metric_names"], nlohmann::json::array({"critic/score/mean"}));
  const auto m = fetch_dashboard_json(server.url(), "/api/metrics?since=0", 5s);
  ASSERT_EQ(m["rows"].size(), 1u);
  EXPECT_DOUBLE_EQ(m["rows"][0]["metrics"]["critic/score/mean"].get<double>(), 0.25);
  try {
    fetch_dashboard_json(server.url(), "/api/logs?worker=nobody", 5s);
    ADD_FAILURE() << "an unknown worker was answered";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("HTTP 404"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nobody"), std::string::npos) << e.what();
  }

  // A taken port: another one, still serving.
  DashboardOptions same = o;
  same.port = server.port();
  DashboardServer second(same, board);
  EXPECT_NE(second.port(), server.port());
  EXPECT_EQ(fetch_dashboard_json(second.url(), "/api/state", 5s)["run"]["exp_name"], "exp");
}

TEST(MonitorDashboard, RunRecordsListRunningDriversOnly) {
  const std::string dir = test::make_scratch_dir();
  RunRecord me;
  me.pid = static_cast<int>(getpid());
  me.pipeline = "agentic";
  me.exp_name = "mine";
  me.dashboard_url = "http://127.0.0.1:1/";
  const std::string path = write_run_record(dir, me);
  EXPECT_TRUE(std::filesystem::exists(path));
  // A driver that is gone: a child that has exited and been reaped.
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  waitpid(child, nullptr, 0);
  RunRecord gone = me;
  gone.pid = child;
  const std::string gone_path = write_run_record(dir, gone);
  std::ofstream(run_records_dir(dir) + "/broken.json") << "{";
  const auto runs = running_run_records(dir);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].pid, me.pid);
  EXPECT_EQ(runs[0].exp_name, "mine");
  EXPECT_FALSE(std::filesystem::exists(gone_path)) << "a gone driver's record is removed";
  EXPECT_FALSE(std::filesystem::exists(run_records_dir(dir) + "/broken.json"));
}

TEST(MonitorDashboard, LastLinesOfAFile) {
  const std::string dir = test::make_scratch_dir();
  const std::string path = dir + "/log.txt";
  {
    std::ofstream out(path);
    for (int i = 0; i < 1000; ++i) out << "line " << i << "\n";
  }
  EXPECT_EQ(core::last_lines(path, 2), (std::vector<std::string>{"line 998", "line 999"}));
  // A window of 20 bytes: the partial first line is dropped.
  const auto few = core::last_lines(path, 100, 20);
  ASSERT_FALSE(few.empty());
  EXPECT_EQ(few.back(), "line 999");
  for (const auto& l : few) EXPECT_EQ(l.rfind("line ", 0), 0u) << l;
  EXPECT_TRUE(core::last_lines(dir + "/missing", 5).empty());
}

}  // namespace
}  // namespace roll::monitor
