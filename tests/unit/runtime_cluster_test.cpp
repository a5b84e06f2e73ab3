// Worker processes, RPC and ROLL's dispatch modes through real processes: this test binary is
// the worker host (`--roll-worker`, see test_main.cpp) serving the roles registered below.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "roll/comm/store.h"
#include "roll/config/placement.h"
#include "roll/core/error.h"
#include "roll/runtime/child_process.h"
#include "roll/runtime/role.h"
#include "roll/runtime/rpc_server.h"
#include "roll/runtime/runtime.h"
#include "roll/runtime/worker_launch.h"
#include "unit/multiprocess.h"
#include "unit/worker_runtime.h"

namespace roll::runtime {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// A role whose methods show what a worker received and where it runs.
class EchoRole : public Role {
 public:
  explicit EchoRole(WorkerContext& ctx) : ctx_(ctx) {}
  void bind(RpcServer& s) override {
    s.on_call("whoami", [this](Payload) {
      return Payload(json{{"rank", ctx_.rank}, {"world", ctx_.world_size}, {"cluster", ctx_.cluster},
                          {"worker", ctx_.worker_name}, {"threads", ctx_.threads}, {"pid", getpid()},
                          {"has_config", ctx_.config.has_value()}});
    });
    s.on_call("echo", [this](Payload p) {
      json out = p.args;
      out["rank"] = ctx_.rank;
      return Payload(out);
    });
    // Doubles tensor x and records which rank saw each row.
    s.on_call("double", [this](Payload p) {
      Batch b = *p.batch;
      b.set_tensor("x", b.tensor("x") * 2);
      b.set_column("seen_by", NonTensorColumn(static_cast<size_t>(b.size()), Cell(ctx_.rank)));
      b.meta["metrics"] = json{{"rows", json::array({b.size()})}};
      return Payload(json{{"rank", ctx_.rank}}, std::move(b));
    });
    s.on_call("fail", [](Payload) -> Payload { throw Error("boom from the role"); });
    s.on_call("sleep", [](Payload p) {
      std::this_thread::sleep_for(std::chrono::milliseconds(p.args.value("ms", 1000)));
      return Payload();
    });
    s.on_call("getenv", [](Payload p) {
      json out = json::object();
      for (const auto& name : p.args.at("names")) {
        const char* v = std::getenv(name.get<std::string>().c_str());
        out[name.get<std::string>()] = v ? json(v) : json(nullptr);
      }
      return Payload(out);
    });
  }

 private:
  WorkerContext& ctx_;
};

class BrokenRole : public Role {
 public:
  explicit BrokenRole(WorkerContext& ctx) {
    throw Error("the model directory of " + ctx.worker_name + " is missing (test)");
  }
  void bind(RpcServer&) override {}
};

const bool registered = [] {
  register_role("test_echo", [](WorkerContext& c) { return std::make_unique<EchoRole>(c); });
  register_role("test_broken", [](WorkerContext& c) -> std::unique_ptr<Role> { return std::make_unique<BrokenRole>(c); });
  return true;
}();

std::string self_exe() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

RuntimeOptions test_options(const std::string& dir) {
  RuntimeOptions o;
  o.worker_command = {self_exe(), "--roll-worker"};
  o.log_dir = dir + "/logs";
  o.run_dir = dir;
  o.start_timeout = 60s;
  o.rpc_timeout = 30s;
  o.forward_output = false;
  o.cores = 4;
  return o;
}

// A CPU-only cluster placement of `world` workers named like ROLL's (cluster-rank).
ClusterSpec cpu_cluster(const std::string& name, int world, const std::string& role = "test_echo") {
  return test::cpu_cluster_spec(name, world, role);
}

bool process_gone(pid_t pid) {
  if (kill(pid, 0) != 0) return true;
  // A zombie whose parent died and that nobody reaped yet runs no code either.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto close_paren = s.rfind(')');
  return close_paren != std::string::npos && close_paren + 2 < s.size() && s[close_paren + 2] == 'Z';
}

bool all_gone_within(const std::vector<pid_t>& pids, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    bool all = true;
    for (pid_t p : pids) all = all && process_gone(p);
    if (all) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

TEST(RuntimeCluster, DispatchModesOverFourWorkers) {
  std::string dir = test::make_scratch_dir();
  Runtime rt(test_options(dir));
  auto c = rt.start(cpu_cluster("echo", 4));
  ASSERT_EQ(c->world_size(), 4);

  auto all = c->call("echo", Dispatch::one_to_all, Payload(json{{"x", 7}})).get_all();
  ASSERT_EQ(all.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(all[r].args["rank"], r);
    EXPECT_EQ(all[r].args["x"], 7);
  }
  auto one = c->call("echo", Dispatch::one_to_all_one, Payload(json{{"x", 8}})).get();
  EXPECT_EQ(one.args["rank"], 0);
  EXPECT_EQ(one.args["x"], 8);

  std::vector<Payload> each;
  for (int r = 0; r < 4; ++r) each.emplace_back(json{{"x", 100 + r}});
  auto passthrough = c->call_each("echo", std::move(each)).get_all();
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(passthrough[r].args["x"], 100 + r);
    EXPECT_EQ(passthrough[r].args["rank"], r);
  }

  // 7 rows over 4 ranks: padded to 8 (row 0 repeated at the end), 2 rows each, unpadded after.
  Batch b(7);
  b.set_tensor("x", at::arange(7, at::kFloat));
  b.set_column("id", NonTensorColumn{"a", "b", "c", "d", "e", "f", "g"});
  Payload out = c->call("double", Dispatch::dp_mp_compute, Payload(b)).get();
  ASSERT_TRUE(out.batch);
  ASSERT_EQ(out.batch->size(), 7);
  EXPECT_TRUE(at::equal(out.batch->tensor("x"), at::arange(7, at::kFloat) * 2));
  std::vector<int> seen;
  for (int64_t i = 0; i < 7; ++i) {
    seen.push_back(static_cast<int>(out.batch->get_int("seen_by", i)));
    EXPECT_EQ(out.batch->get_string("id", i), std::string(1, static_cast<char>('a' + i)));
  }
  EXPECT_EQ(seen, (std::vector<int>{0, 0, 1, 1, 2, 2, 3}));
  EXPECT_EQ(out.args["rank"], 0);
  // meta "metrics" are merged over the ranks (Batch::concat's global keys).
  EXPECT_EQ(out.batch->meta["metrics"]["rows"].size(), 4u);
}

TEST(RuntimeCluster, WorkersGetHugePageMallocUnlessTheUserChose) {
  EXPECT_EQ(with_malloc_hugepages(""), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(with_malloc_hugepages("glibc.malloc.arena_max=2"), "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
  EXPECT_EQ(with_malloc_hugepages("glibc.malloc.hugetlb=0"), "glibc.malloc.hugetlb=0");
  const auto env = worker_environment({{"CUDA_VISIBLE_DEVICES", "3"}});
  ASSERT_TRUE(env.count("GLIBC_TUNABLES"));
  EXPECT_NE(env.at("GLIBC_TUNABLES").find("glibc.malloc.hugetlb="), std::string::npos);
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "3");
}

TEST(RuntimeCluster, WorkerIdentityThreadsAndLogFile) {
  std::string dir = test::make_scratch_dir();
  Runtime rt(test_options(dir));
  ClusterSpec spec = cpu_cluster("actor_train", 2);
  // Two device slots of a 4-slot node: cores 4 -> 2 threads each.
  for (int r = 0; r < 2; ++r) spec.placement.workers[r].devices = {r * 2, r * 2 + 1};
  spec.placement.cpu_only = false;
  spec.devices_per_node = 4;
  auto c = rt.start(std::move(spec));
  auto who = c->call("whoami", Dispatch::one_to_all).get_all();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(who[r].args["worker"], "actor_train-" + std::to_string(r));
    EXPECT_EQ(who[r].args["world"], 2);
    EXPECT_EQ(who[r].args["threads"], 2);
    EXPECT_FALSE(who[r].args["has_config"].get<bool>());
  }
  c->shutdown();
  std::ifstream log(dir + "/logs/log_rank_actor_train-1_1_2.log");
  ASSERT_TRUE(log.good()) << "no per-rank log file";
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("[actor_train-1 1 / 2]"), std::string::npos) << text;
  EXPECT_NE(text.find("serving at tcp://127.0.0.1:"), std::string::npos) << text;
}

TEST(RuntimeCluster, HandlerErrorsNameTheWorkerAndMethod) {
  std::string dir = test::make_scratch_dir();
  Runtime rt(test_options(dir));
  auto c = rt.start(cpu_cluster("reward-math_rule", 2));
  try {
    c->call("fail", Dispatch::one_to_all).get_all();
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("'fail'"), std::string::npos) << m;
    // Whichever rank answers first fails the call; both name themselves.
    EXPECT_TRUE(m.find("reward-math_rule-0 (cluster reward-math_rule, rank 0") != std::string::npos ||
                m.find("reward-math_rule-1 (cluster reward-math_rule, rank 1") != std::string::npos)
        << m;
    EXPECT_NE(m.find("boom from the role"), std::string::npos) << m;
  }
  try {
    c->call("no_such_method", Dispatch::one_to_all_one).get();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown method 'no_such_method'"), std::string::npos) << e.what();
  }
  // The workers keep serving after errors.
  EXPECT_EQ(c->call("echo", Dispatch::one_to_all_one, Payload(json{{"x", 1}})).get().args["x"], 1);
}

// system/busy/<cluster> (pipeline/step_profile.h) reads `__busy`: a serial handler's run counts, an
// idle worker's time does not.
TEST(RuntimeCluster, BusyClockCountsSerialHandlersAndNotIdleTime) {
  std::string dir = test::make_scratch_dir();
  Runtime rt(test_options(dir));
  auto c = rt.start(cpu_cluster("reward-math_rule", 1));
  auto busy = [&] { return c->call(kBusyMethod, Dispatch::one_to_all_one).get().args.at("busy_s").get<double>(); };
  const double before = busy();
  const auto t0 = std::chrono::steady_clock::now();
  c->call("sleep", Dispatch::one_to_all, Payload(json{{"ms", 200}})).get_all();
  const double call_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double after_call = busy();
  // The handler ran for its 200 ms sleep, inside the call's round trip.
  EXPECT_GE(after_call - before, 0.2);
  EXPECT_LE(after_call - before, call_s);
  std::this_thread::sleep_for(200ms);
  // Idle (answering `__busy` is inline, not work): well under the 200 ms that passed.
  EXPECT_LT(busy() - after_call, 0.05);
}

TEST(RuntimeCluster, RoleThatFailsToStartIsReportedWithItsError) {
  std::string dir = test::make_scratch_dir();
  Runtime rt(test_options(dir));
  try {
    rt.start(cpu_cluster("critic", 1, "test_broken"));
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("critic-0 (cluster critic, rank 0"), std::string::npos) << m;
    EXPECT_NE(m.find("exited with status 1"), std::string::npos) << m;
    EXPECT_NE(m.find("model directory of critic-0 is missing"), std::string::npos) << m;
  }
  try {
    rt.start(cpu_cluster("critic2", 1, "no_such_role"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown role 'no_such_role'"), std::string::npos) << e.what();
  }
}

TEST(RuntimeCluster, KilledWorkerFailsThePendingCallQuicklyNamingIt) {
  std::string dir = test::make_scratch_dir();
  Runtime rt(test_options(dir));
  auto c = rt.start(cpu_cluster("actor_infer", 2));
  std::vector<pid_t> pids{c->pid(0), c->pid(1)};
  auto pending = c->call("sleep", Dispatch::one_to_all, Payload(json{{"ms", 20000}}));
  std::this_thread::sleep_for(200ms);
  const auto t0 = std::chrono::steady_clock::now();
  kill(pids[1], SIGKILL);
  try {
    pending.get_all();
    FAIL() << "no error";
  } catch (const Error& e) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(s, 5.0);
    std::string m = e.what();
    EXPECT_NE(m.find("actor_infer-1 (cluster actor_infer, rank 1, node 0, pid " + std::to_string(pids[1])),
              std::string::npos) << m;
    EXPECT_NE(m.find("SIGKILL"), std::string::npos) << m;
  }
  ASSERT_TRUE(c->failure().has_value());
  // Later calls fail at once with the same reason.
  EXPECT_THROW(c->call("echo", Dispatch::one_to_all).get_all(), Error);
  // The live rank's client is failed too, so it cannot hear the shutdown call: it is signalled at
  // once rather than after the shutdown grace (3 s) that a told worker gets to exit on its own.
  const auto t1 = std::chrono::steady_clock::now();
  rt.shutdown();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count(), 2.5);
  EXPECT_TRUE(all_gone_within(pids, 5s));
}

// The request router's own clients (Cluster::connect) fail with the cluster: a call pending on a
// live rank fails when another rank dies, as no reset would arrive if a link went down.
TEST(RuntimeCluster, ConnectedClientsFailWithTheCluster) {
  std::string dir = test::make_scratch_dir();
  Runtime rt(test_options(dir));
  auto c = rt.start(cpu_cluster("actor_infer", 2));
  auto router_client = c->connect(0);
  auto pending = router_client->call("sleep", Payload(json{{"ms", 20000}}));
  std::this_thread::sleep_for(200ms);
  const pid_t dead = c->pid(1);
  kill(dead, SIGKILL);
  ASSERT_EQ(pending.wait_for(5s), std::future_status::ready) << "the live rank's call did not fail";
  try {
    pending.get();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("actor_infer-1 (cluster actor_infer, rank 1"), std::string::npos) << e.what();
  }
  // A client made after the failure fails at once.
  EXPECT_THROW(c->connect(0)->call("echo", Payload(json::object())).get(), Error);
  rt.shutdown();
}

// The driver of this test is a child process: SIGKILL it and every worker must end within 5 s.
TEST(RuntimeCluster, WorkersDieWithTheDriver) {
  if (auto ctx = test::child_context()) {
    Runtime rt(test_options(ctx->dir));
    auto c = rt.start(cpu_cluster("actor_train", 2));
    std::ofstream(ctx->dir + "/pids.tmp") << c->pid(0) << " " << c->pid(1) << "\n";
    std::filesystem::rename(ctx->dir + "/pids.tmp", ctx->dir + "/pids");
    std::this_thread::sleep_for(60s);  // killed long before
    return;
  }
  std::string dir = test::make_scratch_dir();
  // Run the driver in the background and kill it once its workers are up.
  std::thread killer([&] {
    for (int i = 0; i < 3000 && !std::filesystem::exists(dir + "/pids"); ++i) std::this_thread::sleep_for(20ms);
    std::ifstream in(dir + "/pids");
    pid_t a = 0, b = 0;
    in >> a >> b;
    // The driver is the parent of the workers.
    std::ifstream stat("/proc/" + std::to_string(a) + "/stat");
    std::string s((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    pid_t driver = 0;
    auto close_paren = s.rfind(')');
    if (close_paren != std::string::npos) std::sscanf(s.c_str() + close_paren + 4, "%d", &driver);
    ASSERT_GT(driver, 1);
    kill(driver, SIGKILL);
    EXPECT_TRUE(all_gone_within({a, b}, 5s)) << "workers outlived their driver";
  });
  test::RunOptions o;
  o.dir = dir;
  o.timeout_s = 90;
  auto ranks = test::run_ranks(1, o);
  killer.join();
  EXPECT_EQ(ranks[0].exit_code, -SIGKILL) << ranks[0].log;
}

TEST(RuntimeCluster, NpuEmulatedWorkersSeeAscendVisibilityWithLocalIds) {
  std::string dir = test::make_scratch_dir();
  setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3", 1);  // inherited by no worker
  RuntimeOptions o = test_options(dir);
  Runtime rt(o);
  // Placement as the npu rules make it: devices 4..7 of an 8-device node, two per worker.
  ClusterSpec spec = cpu_cluster("actor_infer", 2);
  spec.placement.cpu_only = false;
  spec.devices_per_node = 8;
  for (int r = 0; r < 2; ++r) {
    auto& w = spec.placement.workers[r];
    w.devices = {4 + 2 * r, 5 + 2 * r};
    w.local_devices = w.devices;
    w.env = {{"ASCEND_RT_VISIBLE_DEVICES", std::to_string(4 + 2 * r) + "," + std::to_string(5 + 2 * r)}};
  }
  auto c = rt.start(std::move(spec));
  auto env = c->call("getenv", Dispatch::one_to_all,
                     Payload(json{{"names", {"ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "RANK"}}}))
                 .get_all();
  unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(env[0].args["ASCEND_RT_VISIBLE_DEVICES"], "4,5");
  EXPECT_EQ(env[1].args["ASCEND_RT_VISIBLE_DEVICES"], "6,7");
  EXPECT_TRUE(env[0].args["CUDA_VISIBLE_DEVICES"].is_null());
  EXPECT_EQ(env[1].args["RANK"], "1");
}

}  // namespace
}  // namespace roll::runtime
