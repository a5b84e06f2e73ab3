#include "roll/runtime/rpc_client.h"

#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "roll/core/error.h"
#include "roll/runtime/outbox.h"

namespace roll::runtime {

struct RpcClient::Impl {
  std::string endpoint, peer;
  zmq::socket_t socket{zmq_context(), zmq::socket_type::dealer};
  Outbox outbox;
  std::atomic<bool> done{false};
  std::thread thread;

  mutable std::mutex mu;
  uint64_t next_id = 1;
  struct Pending {
    std::string method;
    Callback callback;
    std::chrono::steady_clock::time_point started;

    void succeed(Payload p) { callback(&p, ""); }
    void fail(const std::string& message) { callback(nullptr, message); }
  };
  std::map<uint64_t, Pending> pending;
  std::map<std::string, std::deque<double>> completed;  // seconds per method, the most recent first out
  std::string failed;  // non-empty: the peer is dead, every call fails with this

  std::string describe(const std::string& method) const { return "call '" + method + "' on " + peer; }

  void run() {
    while (!done) {
      zmq::pollitem_t items[] = {{static_cast<void*>(socket), 0, ZMQ_POLLIN, 0},
                                 {nullptr, outbox.fd(), ZMQ_POLLIN, 0}};
      if (!poll_retrying_eintr(items, 2, std::chrono::milliseconds(200))) continue;
      if (items[1].revents & ZMQ_POLLIN)
        for (auto& frames : outbox.take()) send_frames(socket, frames);
      if (items[0].revents & ZMQ_POLLIN) {
        auto frames = recv_frames(socket);
        Message m;
        try {
          m = decode_message(frames, 0);
        } catch (const std::exception&) {
          continue;  // cannot tell which call it answers; its caller times out
        }
        Pending p;
        {
          std::lock_guard<std::mutex> g(mu);
          auto it = pending.find(m.id);
          if (it == pending.end()) continue;  // answered after fail_all
          p = std::move(it->second);
          pending.erase(it);
          if (m.kind == MessageKind::ok) {
            auto& times = completed[p.method];
            times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - p.started).count());
            if (times.size() > kRecentCalls) times.pop_front();
          }
        }
        if (m.kind == MessageKind::ok)
          p.succeed(std::move(m.payload));
        else
          p.fail(describe(p.method) + " failed: " + m.error);
      }
    }
  }
};

RpcClient::RpcClient(const std::string& endpoint, std::string peer) : impl_(std::make_unique<Impl>()) {
  impl_->endpoint = endpoint;
  impl_->peer = std::move(peer);
  impl_->socket.set(zmq::sockopt::linger, 0);
  try {
    impl_->socket.connect(endpoint);
  } catch (const zmq::error_t& e) {
    throw Error("rpc: cannot connect to " + impl_->peer + " at " + endpoint + ": " + e.what());
  }
  Impl* raw = impl_.get();
  impl_->thread = std::thread([raw] { raw->run(); });
}

RpcClient::~RpcClient() {
  impl_->done = true;
  impl_->thread.join();
  fail_all("the client was closed");
}

std::future<Payload> RpcClient::call(const std::string& method, Payload args) {
  auto promise = std::make_shared<std::promise<Payload>>();
  std::future<Payload> f = promise->get_future();
  call_async(method, std::move(args), [promise](Payload* result, const std::string& error) {
    if (result) promise->set_value(std::move(*result));
    else promise->set_exception(std::make_exception_ptr(Error(error)));
  });
  return f;
}

void RpcClient::call_async(const std::string& method, Payload args, Callback done) {
  Message m;
  m.kind = MessageKind::call;
  m.method = method;
  m.payload = std::move(args);
  {
    std::unique_lock<std::mutex> g(impl_->mu);
    if (!impl_->failed.empty()) {
      std::string why = impl_->describe(method) + " failed: " + impl_->failed;
      g.unlock();
      done(nullptr, why);
      return;
    }
    m.id = impl_->next_id++;
    auto& entry = impl_->pending[m.id];
    entry.method = method;
    entry.callback = std::move(done);
    entry.started = std::chrono::steady_clock::now();
  }
  impl_->outbox.push(encode_message(m));
}

Payload RpcClient::call_sync(const std::string& method, Payload args, std::chrono::milliseconds timeout) {
  auto f = call(method, std::move(args));
  return wait_result(f, timeout, impl_->describe(method));
}

void RpcClient::fail_all(const std::string& reason) {
  std::map<uint64_t, Impl::Pending> failing;
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    if (impl_->failed.empty()) impl_->failed = reason;
    failing.swap(impl_->pending);
  }
  for (auto& [id, p] : failing) p.fail(impl_->describe(p.method) + " failed: " + reason);
}

bool RpcClient::failed() const {
  std::lock_guard<std::mutex> g(impl_->mu);
  return !impl_->failed.empty();
}

const std::string& RpcClient::peer() const { return impl_->peer; }

size_t RpcClient::pending() const {
  std::lock_guard<std::mutex> g(impl_->mu);
  return impl_->pending.size();
}

std::vector<RpcClient::PendingCall> RpcClient::pending_calls() const {
  std::lock_guard<std::mutex> g(impl_->mu);
  std::vector<PendingCall> out;
  for (const auto& [id, p] : impl_->pending) out.push_back({id, p.method, p.started});
  return out;
}

std::vector<double> RpcClient::completed_seconds(const std::string& method) const {
  std::lock_guard<std::mutex> g(impl_->mu);
  auto it = impl_->completed.find(method);
  return it == impl_->completed.end() ? std::vector<double>{} : std::vector<double>(it->second.begin(), it->second.end());
}

Payload wait_result(std::future<Payload>& f, std::chrono::milliseconds timeout, const std::string& what) {
  if (f.wait_for(timeout) != std::future_status::ready)
    throw Error(fmt::format("{} timed out after {:.1f} s", what, timeout.count() / 1000.0));
  return f.get();
}

}  // namespace roll::runtime
