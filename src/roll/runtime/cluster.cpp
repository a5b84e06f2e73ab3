#include "roll/runtime/cluster.h"

#include <fmt/format.h>
#include <unistd.h>

#include <thread>

#include "roll/comm/store.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/runtime/child_process.h"
#include "roll/runtime/node_set.h"
#include "roll/runtime/runtime.h"
#include "roll/runtime/worker_launch.h"
#include "roll/runtime/worker_registry.h"

namespace roll::runtime {
namespace {

std::string indent_lines(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += "\n  | " + l;
  return s;
}

}  // namespace

ClusterFuture::ClusterFuture(std::string what, Dispatch mode, std::vector<std::future<Payload>> parts, int64_t pad,
                             std::chrono::milliseconds timeout)
    : what_(std::move(what)), mode_(mode), parts_(std::move(parts)), pad_(pad), timeout_(timeout) {}

std::vector<Payload> ClusterFuture::get_all() {
  if (parts_.empty()) throw Error(what_ + ": the result was already taken");
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  // The first rank to fail fails the call at once: its peers may be stuck in a collective that
  // can no longer finish, and must not be waited for.
  std::vector<bool> done(parts_.size(), false);
  std::vector<Payload> out(parts_.size());
  size_t left = parts_.size();
  while (left > 0) {
    for (size_t r = 0; r < parts_.size(); ++r) {
      if (done[r] || parts_[r].wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) continue;
      done[r] = true;
      --left;
      try {
        out[r] = parts_[r].get();
      } catch (const std::exception& e) {
        parts_.clear();
        throw Error(what_ + " on rank " + std::to_string(r) + ": " + e.what());
      }
    }
    if (left == 0) break;
    if (std::chrono::steady_clock::now() > deadline)
      throw Error(fmt::format("{} timed out after {:.1f} s ({} rank(s) unanswered)", what_, timeout_.count() / 1000.0, left));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  parts_.clear();
  return out;
}

Payload ClusterFuture::get() { return collect_one(mode_, get_all(), pad_); }

Cluster::Cluster(Runtime& runtime, ClusterSpec spec)
    : runtime_(runtime), spec_(std::move(spec)), rpc_timeout_(runtime.options().rpc_timeout) {}

Cluster::~Cluster() { shutdown(std::chrono::milliseconds(1000)); }

std::string Cluster::describe(int rank) const {
  const auto& w = spec_.placement.workers.at(static_cast<size_t>(rank));
  pid_t p = workers_.size() > static_cast<size_t>(rank) && workers_[rank].process ? workers_[rank].process->pid() : 0;
  return fmt::format("{} (cluster {}, rank {}, node {}, pid {})", w.name, name(), rank, w.node, p);
}

void Cluster::launch() {
  const RuntimeOptions& o = runtime_.options();
  const int world = static_cast<int>(spec_.placement.workers.size());
  workers_.resize(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    const config::WorkerPlacement& wp = spec_.placement.workers[r];
    // One node: every worker here, whatever its node (a plan for several nodes runs on this one).
    const bool remote = o.nodes && wp.node != 0;
    const NodeInfo* node = o.nodes ? &o.nodes->node(wp.node) : nullptr;
    WorkerLaunch launch;
    launch.cluster = name();
    launch.role = spec_.role;
    launch.worker_name = wp.name;
    launch.rank = wp.rank;
    launch.world_size = world;
    launch.node_rank = wp.node;
    launch.local_devices = wp.local_devices;
    launch.threads = runtime_.threads_for(wp, spec_.devices_per_node, remote ? node->cores : 0);
    launch.store_host = o.nodes ? o.nodes->identity().master_addr : o.host;
    launch.store_port = runtime_.store()->port();
    launch.bind_host = node ? node->address : o.host;
    launch.log_dir = o.log_dir;
    launch.run_dir = o.run_dir;
    launch.driver_pid = getpid();
    launch.options = spec_.options;

    std::map<std::string, std::string> settings;
    settings["OMP_NUM_THREADS"] = std::to_string(launch.threads);
    // Several compute processes share this node's cores: idle OpenMP threads must not spin.
    settings["OMP_WAIT_POLICY"] = "PASSIVE";
    for (const auto& [k, v] : wp.env) settings[k] = v;  // placement: ROLL's variables, visibility, system_envs
    for (const auto& [k, v] : launch.to_env()) settings[k] = v;
    for (const auto& [k, v] : o.extra_env) settings[k] = v;
    // A user's OMP_NUM_THREADS in system_envs wins over ours.
    for (const auto& [k, v] : wp.env)
      if (k == "OMP_NUM_THREADS") settings[k] = v;

    auto on_exit = [this, r](const std::string& how) { on_worker_exit(r, how); };
    if (remote) {
      workers_[r].process = o.nodes->spawn(wp.node, {wp.name, std::move(settings)}, on_exit);
      continue;
    }
    SpawnOptions so;
    so.name = wp.name;
    so.argv = o.worker_command;
    so.env = worker_environment(settings);
    so.forward_output = o.forward_output;
    so.on_exit = on_exit;
    auto child = ChildProcess::spawn(std::move(so));
    register_worker_pid(child->pid());
    workers_[r].process = std::move(child);
  }
}

void Cluster::wait_ready(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto& store = *runtime_.store();
  size_t ready = 0;
  while (ready < workers_.size()) {
    ready = 0;
    for (int r = 0; r < world_size(); ++r) {
      Worker& w = workers_[r];
      if (w.client) {
        ++ready;
        continue;
      }
      if (store.check({endpoint_key(name(), r)})) {
        w.endpoint = store.get(endpoint_key(name(), r));
        std::lock_guard<std::mutex> g(mu_);
        w.client = std::make_unique<RpcClient>(w.endpoint, describe(r));
        if (failure_) w.client->fail_all(*failure_);
        ++ready;
        continue;
      }
      if (auto how = w.process->exit_description()) {
        std::string why;
        if (store.check({failure_key(name(), r)})) why = ": " + store.get(failure_key(name(), r));
        throw Error(fmt::format("worker {} {} before serving{}{}", describe(r), *how, why,
                                indent_lines(w.process->last_lines())));
      }
    }
    if (ready == workers_.size()) break;
    if (std::chrono::steady_clock::now() > deadline)
      throw Error(fmt::format("cluster {}: {} of {} workers did not start within {} s", name(),
                              workers_.size() - ready, workers_.size(), timeout.count() / 1000));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void Cluster::on_worker_exit(int rank, const std::string& how) {
  unregister_worker_pid(workers_[rank].process->pid());
  if (worker_exit_expected()) return;
  std::string reason;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (stopping_) return;
    reason = fmt::format("worker {} {}; last log lines:{}", describe(rank), how,
                         indent_lines(workers_[rank].process->last_lines()));
    log::error("{}", reason);
    // Every call pending anywhere in this cluster fails now: a collective step cannot finish
    // without this rank.
    fail_locked(reason);
  }
  // And every other cluster's: the run cannot go on without this worker, and the driver may be
  // waiting on another cluster for a whole phase before it calls this one again.
  runtime_.fail_all_calls(reason);
}

void Cluster::fail_locked(const std::string& reason) {
  if (!failure_) failure_ = reason;
  for (auto& w : workers_)
    if (w.client) w.client->fail_all(reason);
  for (auto& [rank, weak] : extra_clients_)
    if (auto c = weak.lock()) c->fail_all(reason);
}

std::shared_ptr<RpcClient> Cluster::connect(int rank) {
  auto c = std::make_shared<RpcClient>(endpoint(rank), describe(rank));
  std::lock_guard<std::mutex> g(mu_);
  if (failure_) c->fail_all(*failure_);
  extra_clients_.emplace_back(rank, c);
  return c;
}

void Cluster::fail_calls(const std::string& reason) {
  std::lock_guard<std::mutex> g(mu_);
  if (!stopping_) fail_locked(reason);
}

std::optional<std::string> Cluster::failure() const {
  std::lock_guard<std::mutex> g(mu_);
  return failure_;
}

RpcClient& Cluster::client(int rank, const std::string& method) {
  auto& w = workers_.at(static_cast<size_t>(rank));
  if (!w.client) throw Error(fmt::format("{}.{}: the cluster is shut down", name(), method));
  return *w.client;
}

ClusterFuture Cluster::call(const std::string& method, Dispatch mode, const Payload& args) {
  DispatchPlan plan = plan_dispatch(mode, args, world_size());
  std::vector<std::future<Payload>> parts;
  for (int r = 0; r < world_size(); ++r) parts.push_back(client(r, method).call(method, std::move(plan.per_rank[r])));
  return ClusterFuture(fmt::format("{}.{} ({})", name(), method, to_string(mode)), mode, std::move(parts), plan.pad,
                       rpc_timeout_);
}

ClusterFuture Cluster::call_each(const std::string& method, std::vector<Payload> per_rank) {
  if (static_cast<int>(per_rank.size()) != world_size())
    throw Error(fmt::format("{}.{} (ALL_TO_ALL): {} argument sets for {} workers", name(), method, per_rank.size(),
                            world_size()));
  std::vector<std::future<Payload>> parts;
  for (int r = 0; r < world_size(); ++r) parts.push_back(client(r, method).call(method, std::move(per_rank[r])));
  return ClusterFuture(fmt::format("{}.{} (ALL_TO_ALL)", name(), method), Dispatch::all_to_all, std::move(parts), 0,
                       rpc_timeout_);
}

std::future<Payload> Cluster::call_rank(int rank, const std::string& method, Payload args) {
  return client(rank, method).call(method, std::move(args));
}

const std::string& Cluster::endpoint(int rank) const { return workers_.at(static_cast<size_t>(rank)).endpoint; }
pid_t Cluster::pid(int rank) const { return workers_.at(static_cast<size_t>(rank)).process->pid(); }

void Cluster::shutdown(std::chrono::milliseconds grace) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  // A client failed by a worker's death sends nothing more, so those workers never hear the
  // shutdown call: they are signalled at once instead of after the grace.
  std::vector<bool> told(workers_.size(), false);
  for (size_t i = 0; i < workers_.size(); ++i) {
    auto& w = workers_[i];
    if (!w.client || !w.process || !w.process->running() || w.client->failed()) continue;
    w.client->call(kShutdownMethod);
    told[i] = true;
  }
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (size_t i = 0; i < workers_.size(); ++i) {
    auto& w = workers_[i];
    if (!w.process) continue;
    auto left = told[i] ? std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
                        : std::chrono::milliseconds(0);
    if (!w.process->wait_for(std::max(left, std::chrono::milliseconds(0)))) w.process->stop();
  }
  std::vector<std::unique_ptr<RpcClient>> closing;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (auto& w : workers_) closing.push_back(std::move(w.client));
  }
}

Cluster::RankActivity Cluster::activity(int rank) const {
  RankActivity a;
  std::lock_guard<std::mutex> g(mu_);
  const auto& w = workers_.at(static_cast<size_t>(rank));
  if (w.process) {
    a.pid = w.process->pid();
    a.on_this_node = w.process->on_this_node();
    a.running = !stopping_ && w.process->running();
  }
  if (w.client)
    for (auto& c : w.client->pending_calls())
      if (c.method.rfind("__", 0) != 0) a.calls.push_back(std::move(c));
  for (size_t i = 0; i < extra_clients_.size(); ++i) {
    if (extra_clients_[i].first != rank) continue;
    if (auto client = extra_clients_[i].second.lock())
      for (auto& c : client->pending_calls()) {
        if (c.method.rfind("__", 0) == 0) continue;
        c.id |= static_cast<uint64_t>(i + 1) << 48;
        a.calls.push_back(std::move(c));
      }
  }
  return a;
}

std::vector<double> Cluster::completed_seconds(const std::string& method) const {
  std::vector<double> out;
  std::lock_guard<std::mutex> g(mu_);
  for (const auto& w : workers_)
    if (w.client)
      for (double s : w.client->completed_seconds(method)) out.push_back(s);
  for (const auto& [rank, weak] : extra_clients_)
    if (auto client = weak.lock())
      for (double s : client->completed_seconds(method)) out.push_back(s);
  return out;
}

std::optional<Payload> Cluster::ask(int rank, const std::string& method, std::chrono::milliseconds timeout,
                                    Payload args) {
  std::future<Payload> f;
  {
    std::lock_guard<std::mutex> g(mu_);
    auto& w = workers_.at(static_cast<size_t>(rank));
    if (stopping_ || !w.client) return std::nullopt;
    f = w.client->call(method, std::move(args));
  }
  if (f.wait_for(timeout) != std::future_status::ready) return std::nullopt;
  try {
    return f.get();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace roll::runtime
