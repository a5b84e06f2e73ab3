#pragma once
// Multi-process tests. A test starts N ranks by re-executing this test binary (/proc/self/exe)
// with posix_spawn (never a bare fork of a threaded process), --gtest_filter naming the same test,
// and ROLL_TEST_CHILD=<Suite.Name>, ROLL_TEST_RANK, ROLL_TEST_WORLD_SIZE, ROLL_TEST_STORE_PORT,
// ROLL_TEST_DIR in the environment. The same TEST body then takes the child branch:
//
//   TEST(CommCollectives, AllReduce) {
//     if (auto ctx = roll::test::child_context()) { ...rank ctx->rank's part...; return; }
//     auto ranks = roll::test::run_ranks(2);  // the parent: hosts the store, waits, collects
//     roll::test::expect_all_ok(ranks);
//   }
//
// The parent hosts the TCPStore on a free port, so concurrent test runs never collide. Children
// die with the parent (PR_SET_PDEATHSIG) and are killed at the timeout.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "roll/comm/process_group.h"
#include "roll/comm/store.h"

extern char** environ;

namespace roll::test {

struct ChildContext {
  int rank = 0;
  int world_size = 1;
  uint16_t store_port = 0;
  std::string dir;  // shared scratch directory of this run (results, checkpoints)
  int threads = 1;  // ATen threads the child should use
  std::map<std::string, std::string> env;  // the extra variables the parent passed
};

inline std::string current_test_name() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string(info->test_suite_name()) + "." + info->name();
}

inline std::optional<std::string> getenv_str(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

// Set in a child started by run_ranks for the current test; nullopt in the parent.
inline std::optional<ChildContext> child_context() {
  auto who = getenv_str("ROLL_TEST_CHILD");
  if (!who || *who != current_test_name()) return std::nullopt;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) std::_Exit(3);  // the parent died before prctl took effect
  ChildContext c;
  c.rank = std::stoi(getenv_str("ROLL_TEST_RANK").value_or("0"));
  c.world_size = std::stoi(getenv_str("ROLL_TEST_WORLD_SIZE").value_or("1"));
  c.store_port = static_cast<uint16_t>(std::stoi(getenv_str("ROLL_TEST_STORE_PORT").value_or("0")));
  c.dir = getenv_str("ROLL_TEST_DIR").value_or("");
  c.threads = std::stoi(getenv_str("ROLL_TEST_THREADS").value_or("1"));
  std::istringstream keys(getenv_str("ROLL_TEST_EXTRA_KEYS").value_or(""));
  for (std::string k; std::getline(keys, k, ',');)
    if (!k.empty()) c.env[k] = getenv_str(k.c_str()).value_or("");
  return c;
}

struct RankResult {
  int rank = 0;
  int exit_code = -1;  // the exit status, or -signal when killed
  bool timed_out = false;
  std::string log;  // the child's stdout + stderr
};

struct RunOptions {
  int timeout_s = 120;
  int threads = 1;
  std::map<std::string, std::string> env;  // extra variables for every child
  std::string dir;                          // scratch directory; default: a fresh one under /tmp
};

inline std::string make_scratch_dir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "roll-mp-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

// Starts `world` ranks of the current test, waits for all of them (killing them at the timeout)
// and returns their exit codes and logs, rank order.
inline std::vector<RankResult> run_ranks(int world, RunOptions o = {}) {
  if (o.dir.empty()) o.dir = make_scratch_dir();
  std::filesystem::create_directories(o.dir);
  auto store = roll::comm::Store::tcp({"127.0.0.1", 0, true, std::chrono::seconds(o.timeout_s)});
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string test = current_test_name();

  std::vector<pid_t> pids(world, -1);
  std::vector<RankResult> results(world);
  std::string extra_keys;
  for (const auto& [k, v] : o.env) extra_keys += (extra_keys.empty() ? "" : ",") + k;
  for (int r = 0; r < world; ++r) {
    std::map<std::string, std::string> env;
    for (char** e = environ; *e; ++e) {
      std::string kv(*e);
      auto eq = kv.find('=');
      if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    env["ROLL_TEST_CHILD"] = test;
    env["ROLL_TEST_RANK"] = std::to_string(r);
    env["ROLL_TEST_WORLD_SIZE"] = std::to_string(world);
    env["ROLL_TEST_STORE_PORT"] = std::to_string(store->port());
    env["ROLL_TEST_DIR"] = o.dir;
    env["ROLL_TEST_THREADS"] = std::to_string(o.threads);
    env["ROLL_TEST_EXTRA_KEYS"] = extra_keys;
    env["OMP_NUM_THREADS"] = std::to_string(o.threads);
    for (const auto& [k, v] : o.env) env[k] = v;
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args{exe, "--gtest_filter=" + test, "--gtest_brief=1"};
    std::vector<char*> argv;
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);

    const std::string log = o.dir + "/rank" + std::to_string(r) + ".log";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid = -1;
    int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
      for (pid_t p : pids)
        if (p > 0) kill(p, SIGKILL);
      throw std::runtime_error("posix_spawn of " + exe + " failed: " + std::to_string(rc));
    }
    pids[r] = pid;
    results[r].rank = r;
  }

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.timeout_s);
  int running = world;
  while (running > 0) {
    for (int r = 0; r < world; ++r) {
      if (pids[r] <= 0) continue;
      int status = 0;
      pid_t got = waitpid(pids[r], &status, WNOHANG);
      if (got == pids[r]) {
        results[r].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
        pids[r] = -1;
        --running;
      }
    }
    if (running == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < world; ++r)
        if (pids[r] > 0) {
          kill(pids[r], SIGKILL);
          int status = 0;
          waitpid(pids[r], &status, 0);
          results[r].timed_out = true;
          results[r].exit_code = -SIGKILL;
          pids[r] = -1;
        }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (int r = 0; r < world; ++r) {
    std::ifstream in(o.dir + "/rank" + std::to_string(r) + ".log");
    std::stringstream ss;
    ss << in.rdbuf();
    results[r].log = ss.str();
  }
  return results;
}

// In a child: the process group of this run (joins the parent's store).
inline std::shared_ptr<roll::comm::ProcessGroup> child_group(const ChildContext& c, const std::string& name = "test") {
  auto store = roll::comm::Store::tcp({"127.0.0.1", c.store_port, false, std::chrono::seconds(60)});
  roll::comm::GroupOptions o;
  o.name = name;
  o.timeout = std::chrono::seconds(60);
  return roll::comm::ProcessGroup::create(store, c.rank, c.world_size, o);
}

inline std::vector<RankResult> run_ranks(int world, int timeout_s) {
  RunOptions o;
  o.timeout_s = timeout_s;
  return run_ranks(world, o);
}

inline void expect_all_ok(const std::vector<RankResult>& results) {
  for (const RankResult& r : results)
    EXPECT_TRUE(r.exit_code == 0 && !r.timed_out)
        << "rank " << r.rank << (r.timed_out ? " timed out" : " exited with " + std::to_string(r.exit_code))
        << "; its log:\n"
        << r.log;
}

}  // namespace roll::test
