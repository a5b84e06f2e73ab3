// The driver's hang watchdog through real worker processes (this test binary is the worker host):
// a call blocked in a named function is reported with a stack naming that function and the worker;
// a SIGSTOPped worker is reported with its process state; bounds follow the method's history.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <future>
#include <thread>

#include "roll/config/placement.h"
#include "roll/monitor/dashboard_server.h"
#include "roll/monitor/run_board.h"
#include "roll/monitor/run_status.h"
#include "roll/runtime/hang_watchdog.h"
#include "roll/runtime/role.h"
#include "roll/runtime/rpc_client.h"
#include "roll/runtime/rpc_server.h"
#include "roll/runtime/runtime.h"
#include "unit/multiprocess.h"
#include "unit/worker_runtime.h"

namespace roll::runtime {
namespace {

using namespace std::chrono_literals;

// noinline: the watchdog's stack must show this frame by name.
__attribute__((noinline)) void blocked_in_watchdog_test_role(int ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
  asm volatile("" ::: "memory");
}

class BlockingRole : public Role {
 public:
  explicit BlockingRole(WorkerContext&) {}
  void bind(RpcServer& s) override {
    s.on_call("block", [](Payload p) {
      blocked_in_watchdog_test_role(p.args.value("ms", 100));
      return Payload();
    });
  }
};

const bool registered = [] {
  register_role("test_blocking", [](WorkerContext& c) { return std::make_unique<BlockingRole>(c); });
  return true;
}();

ClusterSpec blocking_cluster(const std::string& name, int world) {
  return test::cpu_cluster_spec(name, world, "test_blocking");
}

// Bounds short enough for a test: a 1 s floor, first calls 2 s, checked every 0.1 s.
RuntimeOptions fast_watchdog_options(const std::string& dir) {
  RuntimeOptions o = test::worker_runtime_options(dir);
  o.watchdog.min_bound = 1s;
  o.watchdog.factor = 2;
  o.watchdog.poll = 100ms;
  o.watchdog.answer_timeout = 2s;
  return o;
}

TEST(RuntimeHangWatchdog, BoundIsFactorTimesTheMedianAboveTheFloor) {
  WatchdogOptions o;
  o.min_bound = 120s;
  o.factor = 5;
  std::string basis;
  EXPECT_DOUBLE_EQ(watchdog_bound_seconds(o, {}, &basis), 600.0);  // first calls: 5 x 120 s
  EXPECT_NE(basis.find("no earlier call"), std::string::npos);
  EXPECT_DOUBLE_EQ(watchdog_bound_seconds(o, {10, 30, 20}, &basis), 120.0);  // 5 x 20 = 100 < 120
  EXPECT_NE(basis.find("floor"), std::string::npos);
  EXPECT_DOUBLE_EQ(watchdog_bound_seconds(o, {40, 60, 50, 100}, &basis), 275.0);  // median 55
  EXPECT_NE(basis.find("4 earlier calls"), std::string::npos) << basis;
}

TEST(RuntimeHangWatchdog, ReportsAStackNamingTheFunctionAndAStoppedWorkersState) {
  const RuntimeOptions o = fast_watchdog_options(test::make_scratch_dir());
  Runtime rt(o);
  auto c = rt.start(blocking_cluster("blocker", 2));
  // The dashboard's /api/state carries the reports.
  monitor::DashboardOptions d;
  d.port = 0;
  d.log_dir = o.log_dir;
  monitor::DashboardServer dashboard(d, std::make_shared<monitor::RunBoard>("test", "watchdog", 1));
  dashboard.attach(&rt);
  // Short calls first: their 0.1 s median leaves the floor (1 s) as the bound of later ones.
  c->call("block", Dispatch::one_to_all, Payload(nlohmann::json{{"ms", 100}})).get_all();
  EXPECT_TRUE(rt.watchdog().reports().empty());

  const pid_t stopped = c->pid(1);
  auto running = c->call_rank(0, "block", Payload(nlohmann::json{{"ms", 6000}}));
  auto frozen = c->call_rank(1, "block", Payload(nlohmann::json{{"ms", 100}}));
  testing::internal::CaptureStderr();  // the driver's log
  ASSERT_EQ(kill(stopped, SIGSTOP), 0);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<StallReport> reports;
  while (std::chrono::steady_clock::now() - t0 < 20s) {
    reports = rt.watchdog().reports();
    if (reports.size() >= 2) break;
    std::this_thread::sleep_for(100ms);
  }
  const nlohmann::json state = monitor::fetch_dashboard_json(dashboard.url(), "/api/state", 5s);
  kill(stopped, SIGCONT);
  const std::string log = testing::internal::GetCapturedStderr();
  ASSERT_EQ(reports.size(), 2u);
  const StallReport* blocked = nullptr;
  const StallReport* halted = nullptr;
  for (const auto& r : reports) (r.rank == 0 ? blocked : halted) = &r;
  ASSERT_TRUE(blocked && halted);

  EXPECT_EQ(blocked->method, "block");
  EXPECT_TRUE(blocked->answered);
  EXPECT_NE(blocked->worker.find("blocker-0"), std::string::npos);
  EXPECT_NE(blocked->stacks.find("blocked_in_watchdog_test_role"), std::string::npos) << blocked->stacks;
  EXPECT_NE(blocked->stacks.find("runtime_hang_watchdog_test.cpp:"), std::string::npos) << blocked->stacks;
  EXPECT_GE(blocked->running_s, blocked->bound_s);
  EXPECT_DOUBLE_EQ(blocked->bound_s, 1.0);
  EXPECT_NE(blocked->message().find("blocker-0"), std::string::npos);

  EXPECT_FALSE(halted->answered);
  EXPECT_EQ(halted->pid, stopped);
  EXPECT_EQ(halted->process_state.substr(0, 1), "T") << halted->process_state;
  EXPECT_NE(halted->message().find("does not answer: process state T (stopped)"), std::string::npos)
      << halted->message();
  EXPECT_NE(halted->worker.find("pid " + std::to_string(stopped)), std::string::npos);

  // The log names the worker and the function; /api/state holds both reports.
  EXPECT_NE(log.find("watchdog: blocker-0"), std::string::npos) << log;
  EXPECT_NE(log.find("blocked_in_watchdog_test_role"), std::string::npos) << log;
  EXPECT_NE(log.find("watchdog: blocker-1"), std::string::npos) << log;
  ASSERT_EQ(state["stalls"].size(), 2u) << state.dump();
  bool named = false, stopped_state = false;
  for (const auto& r : state["stalls"]) {
    named |= r["stacks"].get<std::string>().find("blocked_in_watchdog_test_role") != std::string::npos;
    stopped_state |= r["pid"] == stopped && r["process_state"].get<std::string>().starts_with("T");
  }
  EXPECT_TRUE(named && stopped_state) << state["stalls"].dump(1);

  // One report per call, and the calls still finish.
  running.get();
  frozen.get();
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(rt.watchdog().reports().size(), 2u);
  EXPECT_EQ(rt.watchdog().reports()[0].to_json()["method"], "block");
}


// Calls over a further connection to a rank (Cluster::connect: the request router's, which carry
// the generate requests of a rollout) are watched like the cluster's own.
TEST(RuntimeHangWatchdog, WatchesTheCallsOfTheRoutersConnections) {
  const RuntimeOptions o = fast_watchdog_options(test::make_scratch_dir());
  Runtime rt(o);
  auto c = rt.start(blocking_cluster("routed", 1));
  std::shared_ptr<RpcClient> router_link = c->connect(0);
  std::promise<void> answered;
  testing::internal::CaptureStderr();
  router_link->call_async("block", Payload(nlohmann::json{{"ms", 4000}}),
                          [&](Payload*, const std::string&) { answered.set_value(); });
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<StallReport> reports;
  while (std::chrono::steady_clock::now() - t0 < 10s && reports.empty()) {
    std::this_thread::sleep_for(100ms);
    reports = rt.watchdog().reports();
  }
  answered.get_future().wait();
  const std::string log = testing::internal::GetCapturedStderr();
  ASSERT_EQ(reports.size(), 1u) << log;
  EXPECT_EQ(reports[0].method, "block");
  EXPECT_EQ(reports[0].rank, 0);
  EXPECT_NE(reports[0].worker.find("routed-0"), std::string::npos);
  EXPECT_NE(log.find("watchdog: routed-0"), std::string::npos) << log;
}

}  // namespace
}  // namespace roll::runtime
