#include "roll/runtime/node_set.h"

#include <cctype>

#include <fmt/format.h>

#include <map>

#include "roll/comm/store.h"
#include "roll/core/error.h"
#include "roll/core/json_number.h"
#include "roll/core/log.h"
#include "roll/runtime/node_join.h"

namespace roll::runtime {

using Clock = std::chrono::steady_clock;

// A worker a node agent runs for the head. Its state changes only through finish() (the agent's
// exit report, a lost node, or an agent that does not answer a stop).
class RemoteWorker : public WorkerProcess {
 public:
  bool on_this_node() const override { return false; }
  RemoteWorker(NodeSet& set, int node, int index, std::string name, std::function<void(const std::string&)> on_exit)
      : set_(set), node_(node), index_(index), name_(std::move(name)), on_exit_(std::move(on_exit)) {}

  int node() const { return node_; }
  int index() const { return index_; }
  const std::string& name() const { return name_; }

  pid_t pid() const override {
    std::lock_guard<std::mutex> g(mu_);
    return pid_;
  }
  bool running() const override {
    std::lock_guard<std::mutex> g(mu_);
    return !how_;
  }
  std::optional<std::string> exit_description() const override {
    std::lock_guard<std::mutex> g(mu_);
    return how_;
  }
  std::vector<std::string> last_lines() const override {
    std::lock_guard<std::mutex> g(mu_);
    return lines_;
  }
  bool wait_for(std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lk(mu_);
    return cv_.wait_for(lk, timeout, [&] { return how_.has_value(); });
  }
  void stop(std::chrono::milliseconds grace) override {
    if (!running()) return;
    set_.request_stop(*this, grace);
    // The agent signals, waits `grace`, kills, and reports; beyond that it is not answering.
    if (wait_for(grace + set_.heartbeat_timeout_ + std::chrono::seconds(2))) return;
    finish(fmt::format("was not reported stopped by node {}'s agent", node_), {});
  }

  void set_pid(pid_t p) {
    std::lock_guard<std::mutex> g(mu_);
    pid_ = p;
  }
  // The callback runs before waiters wake, so a Cluster that waited for the exit may go away.
  void finish(const std::string& how, std::vector<std::string> lines) {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (how_ || finishing_) return;
      finishing_ = true;
      lines_ = std::move(lines);
    }
    if (on_exit_) on_exit_(how);
    {
      std::lock_guard<std::mutex> g(mu_);
      how_ = how;
    }
    cv_.notify_all();
  }

 private:
  NodeSet& set_;
  const int node_, index_;
  const std::string name_;
  std::function<void(const std::string&)> on_exit_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  pid_t pid_ = 0;
  bool finishing_ = false;
  std::optional<std::string> how_;
  std::vector<std::string> lines_;
};

std::shared_ptr<NodeSet> NodeSet::start_head(const NodeIdentity& id, const NodeInfo& self,
                                             std::chrono::milliseconds heartbeat_timeout,
                                             std::shared_ptr<comm::Store> store,
                                             std::chrono::milliseconds join_timeout) {
  std::shared_ptr<NodeSet> s(new NodeSet());
  s->id_ = id;
  s->heartbeat_timeout_ = heartbeat_timeout;
  s->store_ = store ? std::move(store) : host_head_store(id);
  s->link_ = comm::Store::tcp({"127.0.0.1", s->store_->port(), false, std::chrono::seconds(60)});
  s->nodes_ = join_nodes(*s->store_, self, join_timeout);
  s->next_index_.assign(s->nodes_.size(), 0);
  s->thread_ = std::thread([p = s.get()] { p->monitor(); });
  return s;
}

NodeSet::~NodeSet() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

const NodeInfo& NodeSet::node(int rank) const {
  if (rank < 0 || rank >= size())
    throw Error(fmt::format("node {} is not in this job: WORLD_SIZE={} (the placement needs more nodes; start "
                            "`roll` on each with RANK=0..{})",
                            rank, size(), rank));
  return nodes_[static_cast<size_t>(rank)];
}

std::shared_ptr<WorkerProcess> NodeSet::spawn(int rank, SpawnRequest request,
                                              std::function<void(const std::string&)> on_exit) {
  const NodeInfo& n = node(rank);
  if (rank == 0) throw Error("NodeSet::spawn: node 0 is the head; its workers are started locally");
  std::lock_guard<std::mutex> g(mu_);
  const int index = next_index_[static_cast<size_t>(rank)]++;
  auto w = std::make_shared<RemoteWorker>(*this, rank, index, request.name, std::move(on_exit));
  link_->set(node_keys::spawn(rank, index), request.to_json().dump());
  workers_.push_back(w);
  log::debug("asked {} to start worker {} (#{})", n.describe(), request.name, index);
  return w;
}

void NodeSet::request_stop(const RemoteWorker& w, std::chrono::milliseconds grace) {
  std::lock_guard<std::mutex> g(mu_);
  link_->set(node_keys::kill(w.node(), w.index()), std::to_string(grace.count()));
}

void NodeSet::on_node_lost(std::function<void(const std::string&)> callback) {
  std::lock_guard<std::mutex> g(lost_cb_mu_);
  lost_cb_ = std::move(callback);
}

void NodeSet::finish(bool ok, const std::string& reason) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (finished_) return;
    finished_ = true;
    try {
      link_->set(node_keys::kStatus, nlohmann::json{{"ok", ok}, {"reason", reason}}.dump());
    } catch (const std::exception& e) {
      log::warn("could not tell the nodes that the job ended: {}", e.what());
      return;
    }
  }
  // The store lives in this process: give the agents a moment to read the end before it goes.
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < deadline) {
    int64_t done = 0;
    {
      std::lock_guard<std::mutex> g(mu_);
      done = link_->add(node_keys::kAgentsDone, 0);
    }
    if (done >= size() - 1 - lost_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  log::warn("not every node acknowledged the end of the job within 5 s");
}

std::optional<std::string> NodeSet::lost_node_named_in(const std::string& error) {
  std::unique_lock<std::mutex> lk(mu_);
  for (size_t k = 1; k < nodes_.size(); ++k) {
    const std::string& a = nodes_[k].address;
    bool named = false;  // as a whole address: 10.0.0.2 must not match inside 10.0.0.23
    for (size_t at = error.find(a); !a.empty() && at != std::string::npos && !named; at = error.find(a, at + 1)) {
      const size_t end = at + a.size();
      const auto part = [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)) || ch == '.'; };
      named = (at == 0 || !part(error[at - 1])) && (end == error.size() || !part(error[end]));
    }
    if (!named) continue;
    const int rank = static_cast<int>(k);
    // The monitor declares a node lost after heartbeat_timeout_ without a beat; a little more
    // covers its polling period.
    stop_cv_.wait_for(lk, heartbeat_timeout_ + std::chrono::seconds(2), [&] { return lost_why_.count(rank) > 0 || stop_; });
    if (auto it = lost_why_.find(rank); it != lost_why_.end()) return it->second;
  }
  return std::nullopt;
}

void NodeSet::monitor() {
  struct Beat {
    int64_t value = -1;
    Clock::time_point changed = Clock::now();
    bool lost = false;
  };
  std::vector<Beat> beats(nodes_.size());
  auto last_head_beat = Clock::now() - std::chrono::seconds(1);
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    std::vector<std::pair<std::shared_ptr<RemoteWorker>, std::string>> lost;  // finished outside the lock
    std::vector<std::string> lost_nodes;
    std::vector<std::tuple<std::shared_ptr<RemoteWorker>, std::string, std::vector<std::string>>> exited;
    try {
      const auto now = Clock::now();
      if (now - last_head_beat >= std::chrono::seconds(1)) {
        link_->add(node_keys::kHeadHeartbeat, 1);
        last_head_beat = now;
      }
      for (size_t k = 1; k < nodes_.size(); ++k) {
        Beat& b = beats[k];
        if (b.lost) continue;
        const int64_t v = link_->add(node_keys::heartbeat(static_cast<int>(k)), 0);
        if (v != b.value) {
          b.value = v;
          b.changed = now;
        } else if (now - b.changed > heartbeat_timeout_) {
          b.lost = true;
          ++lost_;
          const std::string beat = fmt::format("no heartbeat for {:.1f} s (ROLL_HEARTBEAT_TIMEOUT={:.0f})",
                                               std::chrono::duration<double>(now - b.changed).count(),
                                               std::chrono::duration<double>(heartbeat_timeout_).count());
          const std::string why = fmt::format("was lost with {}: {}", nodes_[k].describe(), beat);
          if (!finished_) log::error("{} stopped sending heartbeats", nodes_[k].describe());
          lost_nodes.push_back(fmt::format("{} was lost: {}", nodes_[k].describe(), beat));
          lost_why_[static_cast<int>(k)] = lost_nodes.back();
          stop_cv_.notify_all();
          for (auto& wp : workers_)
            if (auto w = wp.lock(); w && w->node() == static_cast<int>(k) && w->running()) lost.emplace_back(w, why);
        }
      }
      for (auto& wp : workers_) {
        auto w = wp.lock();
        if (!w || !w->running()) continue;
        if (w->pid() == 0 && link_->check({node_keys::spawned(w->node(), w->index())})) {
          auto j = nlohmann::json::parse(link_->get(node_keys::spawned(w->node(), w->index())));
          if (j.contains("error")) {
            exited.emplace_back(w, "could not be started on " + nodes_[w->node()].describe() + ": " +
                                       j["error"].get<std::string>(), std::vector<std::string>{});
            continue;
          }
          w->set_pid(json_integer<pid_t>(j.at("pid"), "pid"));
        }
        if (link_->check({node_keys::exit(w->node(), w->index())})) {
          auto j = nlohmann::json::parse(link_->get(node_keys::exit(w->node(), w->index())));
          exited.emplace_back(w, j.at("how").get<std::string>() + " on " + nodes_[w->node()].describe(),
                              j.value("last_lines", std::vector<std::string>{}));
        }
      }
      std::erase_if(workers_, [](const std::weak_ptr<RemoteWorker>& w) { return w.expired(); });
    } catch (const std::exception& e) {
      log::error("multi-node monitor: the head's store failed: {}", e.what());
      stop_cv_.wait_for(lk, std::chrono::seconds(1), [&] { return stop_; });
      continue;
    }
    lk.unlock();
    for (auto& [w, why] : lost) w->finish(why, {});
    for (const auto& n : lost_nodes) {
      std::lock_guard<std::mutex> g(lost_cb_mu_);
      if (lost_cb_) lost_cb_(n);
    }
    for (auto& [w, how, lines] : exited) w->finish(how, std::move(lines));
    lk.lock();
    stop_cv_.wait_for(lk, std::chrono::milliseconds(100), [&] { return stop_; });
  }
}

}  // namespace roll::runtime
