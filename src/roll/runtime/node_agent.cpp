#include "roll/runtime/node_agent.h"

#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <thread>

#include "roll/comm/store.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/core/log_sinks.h"
#include "roll/runtime/child_process.h"
#include "roll/runtime/node_protocol.h"
#include "roll/runtime/worker_launch.h"

namespace roll::runtime {
namespace {

using Clock = std::chrono::steady_clock;

struct AgentWorker {
  std::string name;
  std::shared_ptr<ChildProcess> process;
  std::optional<Clock::time_point> kill_at;  // SIGKILL then, after the head's stop request
  bool reported = false;
};

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
}

std::string make_run_dir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "roll-node-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw Error("node agent: cannot create a run folder under /tmp");
  return tmpl;
}

}  // namespace

int run_node_agent(const NodeIdentity& id, const std::shared_ptr<comm::Store>& store, const NodeAgentOptions& o) {
  const std::string head = fmt::format("{}:{}", id.master_addr, id.master_port);
  const std::string run_dir = make_run_dir();
  std::map<int, AgentWorker> workers;
  int next_spawn = 0;
  std::vector<std::string> reported_running;
  auto report_running = [&] {
    if (!o.on_workers) return;
    std::vector<std::string> running;
    for (auto& [i, w] : workers)
      if (w.process->running()) running.push_back(w.name);
    if (running != reported_running) o.on_workers(reported_running = std::move(running));
  };
  auto stop_all = [&] {
    for (auto& [i, w] : workers) w.process->signal(SIGTERM);
    for (auto& [i, w] : workers) w.process->stop(std::chrono::milliseconds(2000));
  };
  // A store operation over a dead link may block: a watchdog ends the agent (and with it, through
  // PR_SET_PDEATHSIG, its workers) when no operation has completed for the heartbeat timeout.
  std::atomic<int64_t> last_answer_ms{now_ms()};
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const int64_t silent = now_ms() - last_answer_ms;
      if (!done && silent > o.heartbeat_timeout.count()) {
        log::error("node {} lost the head at {}: its store has not answered for {:.1f} s (ROLL_HEARTBEAT_TIMEOUT={:.0f}); "
                   "stopping this node's workers",
                   id.rank, head, silent / 1000.0, std::chrono::duration<double>(o.heartbeat_timeout).count());
        log::flush();
        std::_Exit(1);
      }
    }
  });
  int64_t head_beat = -1;
  auto head_beat_changed = Clock::now();
  auto last_beat = Clock::now() - std::chrono::seconds(1);
  int rc = 1;
  try {
    for (;;) {
      const auto now = Clock::now();
      const bool ended = store->check({node_keys::kStatus});
      last_answer_ms = now_ms();
      if (ended) {
        done = true;  // the store is not needed any more
        auto status = nlohmann::json::parse(store->get(node_keys::kStatus));
        stop_all();
        store->add(node_keys::kAgentsDone, 1);
        if (status.value("ok", false)) {
          log::info("the head at {} finished the job; node {} worker exit...", head, id.rank);
          rc = 0;
        } else {
          log::error("the head at {} failed: {}", head, status.value("reason", "(no reason given)"));
          rc = 1;
        }
        break;
      }
      if (now - last_beat >= std::chrono::seconds(1)) {
        store->add(node_keys::heartbeat(id.rank), 1);
        last_beat = now;
        const int64_t hb = store->add(node_keys::kHeadHeartbeat, 0);
        if (hb != head_beat) {
          head_beat = hb;
          head_beat_changed = now;
        } else if (now - head_beat_changed > o.heartbeat_timeout) {
          throw Error(fmt::format("no heartbeat from the head for {:.1f} s (ROLL_HEARTBEAT_TIMEOUT={:.0f})",
                                  std::chrono::duration<double>(now - head_beat_changed).count(),
                                  std::chrono::duration<double>(o.heartbeat_timeout).count()));
        }
      }
      while (store->check({node_keys::spawn(id.rank, next_spawn)})) {
        const int index = next_spawn++;
        SpawnRequest req = SpawnRequest::parse(store->get(node_keys::spawn(id.rank, index)), node_keys::spawn(id.rank, index));
        std::map<std::string, std::string> settings = req.settings;
        settings["ROLL_DRIVER_PID"] = std::to_string(getpid());  // workers die with this agent
        settings["ROLL_RUN_DIR"] = run_dir;
        SpawnOptions so;
        so.name = req.name;
        so.argv = o.worker_command;
        so.env = worker_environment(settings);
        so.forward_output = o.forward_output;
        try {
          auto p = ChildProcess::spawn(std::move(so));
          store->set(node_keys::spawned(id.rank, index), nlohmann::json{{"pid", p->pid()}}.dump());
          log::info("node {}: started worker {} (pid {})", id.rank, req.name, p->pid());
          workers[index].name = req.name;
          workers[index].process = std::move(p);
        } catch (const std::exception& e) {
          store->set(node_keys::spawned(id.rank, index), nlohmann::json{{"error", e.what()}}.dump());
        }
      }
      for (auto& [i, w] : workers) {
        if (w.reported) continue;
        if (auto how = w.process->exit_description()) {
          store->set(node_keys::exit(id.rank, i),
                     nlohmann::json{{"how", *how}, {"last_lines", w.process->last_lines()}}.dump());
          w.reported = true;
          continue;
        }
        if (!w.kill_at && store->check({node_keys::kill(id.rank, i)})) {
          const int64_t grace_ms = std::stoll(store->get(node_keys::kill(id.rank, i)));
          w.process->signal(SIGTERM);
          w.kill_at = now + std::chrono::milliseconds(grace_ms);
        } else if (w.kill_at && now > *w.kill_at) {
          w.process->signal(SIGKILL);
        }
      }
      report_running();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  } catch (const std::exception& e) {
    done = true;
    log::error("node {} lost the head at {}: {}; stopping this node's workers", id.rank, head, e.what());
    stop_all();
    rc = 1;
  }
  done = true;
  watchdog.join();
  std::error_code ec;
  std::filesystem::remove_all(run_dir, ec);
  return rc;
}

}  // namespace roll::runtime
