#include "roll/runtime/runtime.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "roll/comm/store.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/runtime/child_process.h"
#include "roll/runtime/config_request.h"
#include "roll/runtime/node_set.h"
#include "roll/runtime/worker_launch.h"
#include "roll/runtime/worker_registry.h"

namespace roll::runtime {
namespace {

std::mutex& pids_mutex() {
  static std::mutex m;
  return m;
}
std::set<pid_t>& live_pids() {
  static std::set<pid_t> s;
  return s;
}
std::atomic<bool> g_stopping_all{false};

}  // namespace

void register_worker_pid(pid_t pid) {
  std::lock_guard<std::mutex> g(pids_mutex());
  live_pids().insert(pid);
}
void unregister_worker_pid(pid_t pid) {
  std::lock_guard<std::mutex> g(pids_mutex());
  live_pids().erase(pid);
}
bool worker_exit_expected() { return g_stopping_all; }

void kill_all_workers() {
  g_stopping_all = true;
  std::set<pid_t> pids;
  {
    std::lock_guard<std::mutex> g(pids_mutex());
    pids = live_pids();
  }
  for (pid_t p : pids) kill(p, SIGTERM);
  // A moment to exit cleanly (flush logs), then no choice.
  for (int i = 0; i < 40; ++i) {
    bool any = false;
    for (pid_t p : pids)
      if (kill(p, 0) == 0) any = true;
    if (!any) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (pid_t p : pids) kill(p, SIGKILL);
}

void install_driver_signal_handling() {
  static std::once_flag once;
  std::call_once(once, [] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread([set] {
      int sig = 0;
      sigwait(&set, &sig);
      std::fprintf(stderr, "\n[roll] %s received: stopping every worker\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
      kill_all_workers();
      std::_Exit(128 + sig);
    }).detach();
  });
}

Runtime::Runtime(RuntimeOptions options) : options_(std::move(options)) {
  if (options_.worker_command.empty()) throw Error("runtime: no worker command given");
  if (options_.run_dir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "roll-run-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw Error("runtime: cannot create a run folder under /tmp");
    options_.run_dir = tmpl;
  }
  std::filesystem::create_directories(options_.log_dir);
  if (options_.nodes) {
    store_ = options_.nodes->store();
    options_.host = options_.nodes->node(0).address;
    options_.nodes->on_node_lost([this](const std::string& reason) { fail_all_calls(reason); });
  } else {
    store_ = comm::Store::tcp({options_.host, 0, true, options_.start_timeout});
  }
  if (options_.config_request)
    store_->set(kConfigRequestKey, config_request_to_json(*options_.config_request).dump());
  watchdog_ = std::make_unique<HangWatchdog>(options_.watchdog, [this] { return clusters(); });
}

Runtime::~Runtime() {
  if (options_.nodes) options_.nodes->on_node_lost(nullptr);
  shutdown();
}

int Runtime::threads_for(const config::WorkerPlacement& w, int devices_per_node, int node_cores) const {
  if (w.devices.empty()) return 1;
  int cores = node_cores > 0       ? node_cores
              : options_.cores > 0 ? options_.cores
                                   : static_cast<int>(std::thread::hardware_concurrency());
  int slots = static_cast<int>(w.devices.size());
  return std::max(1, cores * slots / std::max(1, devices_per_node));
}

std::vector<std::shared_ptr<Cluster>> Runtime::start(std::vector<ClusterSpec> specs) {
  std::vector<std::shared_ptr<Cluster>> clusters;
  for (auto& s : specs) {
    auto c = std::shared_ptr<Cluster>(new Cluster(*this, std::move(s)));
    {
      std::lock_guard<std::mutex> g(mu_);
      clusters_.push_back(c);
    }
    clusters.push_back(c);
  }
  try {
    for (auto& c : clusters) c->launch();
    for (auto& c : clusters) c->wait_ready(options_.start_timeout);
  } catch (...) {
    for (auto& c : clusters) c->shutdown(std::chrono::milliseconds(500));
    throw;
  }
  return clusters;
}

std::shared_ptr<Cluster> Runtime::start(ClusterSpec spec) {
  std::vector<ClusterSpec> one;
  one.push_back(std::move(spec));
  return start(std::move(one)).front();
}

void Runtime::fail_all_calls(const std::string& reason) {
  for (auto& c : clusters()) c->fail_calls(reason);
}

std::vector<std::shared_ptr<Cluster>> Runtime::clusters() const {
  std::vector<std::shared_ptr<Cluster>> alive;
  std::lock_guard<std::mutex> g(mu_);
  for (auto& w : clusters_)
    if (auto c = w.lock()) alive.push_back(c);
  return alive;
}

void Runtime::shutdown() {
  std::vector<std::shared_ptr<Cluster>> alive;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (auto& w : clusters_)
      if (auto c = w.lock()) alive.push_back(c);
    clusters_.clear();
  }
  for (auto& c : alive) c->shutdown();
}

}  // namespace roll::runtime
