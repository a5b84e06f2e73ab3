#include "roll/workers/request_router.h"

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>

#include "roll/core/error.h"
#include "roll/runtime/rpc_client.h"
#include "roll/workers/generate_protocol.h"
#include "roll/workers/rpc_methods.h"

namespace roll::workers {

struct RequestRouter::Impl : std::enable_shared_from_this<RequestRouter::Impl> {
  std::vector<std::shared_ptr<runtime::RpcClient>> ranks;
  RouterKind kind;
  int64_t max_running;

  struct Request {
    GenerationRequest body;
    std::string rid, key;
    int64_t credit = 1;
    Done done;
  };

  mutable std::mutex mu;
  std::condition_variable idle;
  bool suspended = false;
  std::deque<Request> held;
  std::map<std::string, std::pair<int, int64_t>> in_flight;  // rid -> (rank, credit)
  std::map<std::string, int> key_rank;                     // affinity
  std::map<std::string, int64_t> key_active;               // prompt affinity: requests in flight per key
  std::vector<int64_t> load, sent, keys_per_rank;

  // The rank for a request, or -1 to wait (prompt affinity with every rank full). Locked.
  int pick(const Request& r) {
    auto it = key_rank.find(r.key);
    if (it != key_rank.end()) return it->second;
    int best = -1;
    if (kind == RouterKind::env_affinity) {
      for (size_t i = 0; i < ranks.size(); ++i)
        if (best < 0 || keys_per_rank[i] < keys_per_rank[best]) best = static_cast<int>(i);
    } else {
      for (size_t i = 0; i < ranks.size(); ++i)
        if (load[i] < max_running && (best < 0 || load[i] < load[best])) best = static_cast<int>(i);
      if (best < 0) return -1;
    }
    key_rank[r.key] = best;
    ++keys_per_rank[best];
    return best;
  }

  // Sends what can go now, in arrival order. Called with the lock held; sends after releasing it.
  void pump(std::unique_lock<std::mutex>& lk) {
    std::vector<std::pair<int, Request>> go;
    if (!suspended) {
      for (auto it = held.begin(); it != held.end();) {
        int rank = pick(*it);
        if (rank < 0) {
          ++it;
          continue;
        }
        load[rank] += it->credit;
        ++sent[rank];
        in_flight[it->rid] = {rank, it->credit};
        if (kind == RouterKind::prompt_affinity) ++key_active[it->key];
        go.emplace_back(rank, std::move(*it));
        it = held.erase(it);
      }
    }
    lk.unlock();
    for (auto& [rank, r] : go) send(rank, std::move(r));
    lk.lock();
  }

  void send(int rank, Request r) {
    std::weak_ptr<Impl> self = shared_from_this();
    auto done = std::make_shared<Done>(std::move(r.done));
    std::string rid = r.rid, key = r.key;
    ranks[rank]->call_async(rpc::kGenerateRequest, runtime::Payload(request_to_json(r.body)),
                            [self, done, rid, key](runtime::Payload* result, const std::string& error) {
                              if (auto me = self.lock()) me->finished(rid, key);
                              if (!result) return (*done)(nullptr, error);
                              RequestOutput out;
                              try {
                                out = output_from_json(result->args);
                              } catch (const std::exception& e) {
                                return (*done)(nullptr, e.what());
                              }
                              (*done)(&out, "");
                            });
  }

  void finished(const std::string& rid, const std::string& key) {
    std::unique_lock<std::mutex> lk(mu);
    auto it = in_flight.find(rid);
    if (it != in_flight.end()) {
      load[it->second.first] -= it->second.second;
      in_flight.erase(it);
    }
    if (kind == RouterKind::prompt_affinity && --key_active[key] <= 0) {
      // The prompt is done: its next request may go anywhere.
      key_active.erase(key);
      auto kr = key_rank.find(key);
      if (kr != key_rank.end()) {
        --keys_per_rank[kr->second];
        key_rank.erase(kr);
      }
    }
    pump(lk);
    if (held.empty() && in_flight.empty()) idle.notify_all();
  }
};

RequestRouter::RequestRouter(std::vector<std::shared_ptr<runtime::RpcClient>> ranks, RouterKind kind,
                             int64_t max_running_requests)
    : impl_(std::make_shared<Impl>()) {
  if (ranks.empty()) throw Error("router: no infer ranks");
  if (max_running_requests < 1) throw Error("router: max_running_requests must be at least 1");
  impl_->kind = kind;
  impl_->max_running = max_running_requests;
  impl_->load.assign(ranks.size(), 0);
  impl_->sent.assign(ranks.size(), 0);
  impl_->keys_per_rank.assign(ranks.size(), 0);
  impl_->ranks = std::move(ranks);
}

RequestRouter::~RequestRouter() = default;

void RequestRouter::generate(GenerationRequest request, const std::string& affinity_key, Done done) {
  Impl::Request r;
  if (request.request_id.empty()) throw Error("router: a request needs a request id");
  r.rid = request.request_id;
  r.key = affinity_key;
  r.credit = std::max<int64_t>(1, request.params.n);
  r.body = std::move(request);
  r.done = std::move(done);
  std::unique_lock<std::mutex> lk(impl_->mu);
  if (impl_->in_flight.count(r.rid)) throw Error("router: request id '" + r.rid + "' is already in flight");
  impl_->held.push_back(std::move(r));
  impl_->pump(lk);
}

void RequestRouter::abort(const std::string& rid) {
  std::unique_lock<std::mutex> lk(impl_->mu);
  for (auto it = impl_->held.begin(); it != impl_->held.end(); ++it) {
    if (it->rid != rid) continue;
    Impl::Request r = std::move(*it);
    impl_->held.erase(it);
    bool now_idle = impl_->held.empty() && impl_->in_flight.empty();
    lk.unlock();
    // Never sent: an aborted output with no tokens, so the caller can resume it later.
    const RequestOutput out = aborted_output(rid, r.credit);
    r.done(&out, "");
    if (now_idle) impl_->idle.notify_all();
    return;
  }
  auto it = impl_->in_flight.find(rid);
  if (it == impl_->in_flight.end()) return;  // finished already
  int rank = it->second.first;
  lk.unlock();
  impl_->ranks[rank]->call_async(rpc::kAbort, runtime::Payload(abort_to_json(rid)),
                                 [](runtime::Payload*, const std::string&) {});
}

void RequestRouter::abort_all() {
  std::vector<std::string> rids;
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    for (const auto& r : impl_->held) rids.push_back(r.rid);
    for (const auto& [rid, _] : impl_->in_flight) rids.push_back(rid);
  }
  for (const auto& rid : rids) abort(rid);
}

void RequestRouter::suspend() {
  std::lock_guard<std::mutex> g(impl_->mu);
  impl_->suspended = true;
}

void RequestRouter::resume() {
  std::unique_lock<std::mutex> lk(impl_->mu);
  impl_->suspended = false;
  impl_->pump(lk);
}

void RequestRouter::wait_complete() {
  std::unique_lock<std::mutex> lk(impl_->mu);
  impl_->idle.wait(lk, [&] { return impl_->held.empty() && impl_->in_flight.empty(); });
}

RouterStats RequestRouter::stats() const {
  std::lock_guard<std::mutex> g(impl_->mu);
  RouterStats s;
  s.load = impl_->load;
  s.requests = impl_->sent;
  s.held = static_cast<int64_t>(impl_->held.size());
  s.in_flight = static_cast<int64_t>(impl_->in_flight.size());
  s.suspended = impl_->suspended;
  return s;
}

}  // namespace roll::workers
