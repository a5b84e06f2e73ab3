#include "roll/runtime/rpc_server.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <algorithm>
#include <optional>
#include <thread>

#include <unistd.h>

#include "roll/core/busy_clock.h"
#include "roll/core/error.h"
#include "roll/core/file_tail.h"
#include "roll/core/log.h"
#include "roll/core/log_sinks.h"
#include "roll/core/process_memory.h"
#include "roll/core/thread_stacks.h"
#include "roll/runtime/outbox.h"

namespace roll::runtime {

struct Responder::State {
  std::weak_ptr<Outbox> outbox;
  std::string identity;  // the ROUTER routing id of the caller
  uint64_t id = 0;
  std::string method;

  void send(Message m) {
    auto box = outbox.lock();
    if (!box) return;  // the server is gone: nobody to answer to
    m.id = id;
    m.method = method;
    std::vector<zmq::message_t> frames;
    frames.emplace_back(identity.data(), identity.size());
    std::vector<zmq::message_t> body;
    try {
      body = encode_message(m);
    } catch (const std::exception& e) {
      Message err;
      err.id = id;
      err.method = method;
      err.kind = MessageKind::error;
      err.error = std::string("could not encode the reply: ") + e.what();
      body = encode_message(err);
    }
    for (auto& f : body) frames.push_back(std::move(f));
    box->push(std::move(frames));
  }
};

Responder::~Responder() {
  if (state_) fail("the handler of '" + state_->method + "' returned without answering");
}

void Responder::ok(Payload result) {
  if (!state_) throw Error("rpc: a call was answered twice");
  Message m;
  m.kind = MessageKind::ok;
  m.payload = std::move(result);
  std::exchange(state_, nullptr)->send(std::move(m));
}

void Responder::fail(const std::string& error) {
  if (!state_) throw Error("rpc: a call was answered twice");
  Message m;
  m.kind = MessageKind::error;
  m.error = error;
  std::exchange(state_, nullptr)->send(std::move(m));
}

struct RpcServer::Impl {
  zmq::socket_t socket{zmq_context(), zmq::socket_type::router};
  std::string endpoint;
  std::shared_ptr<Outbox> outbox = std::make_shared<Outbox>();
  struct Entry {
    Handler handler;
    RunMode mode;
  };
  std::map<std::string, Entry> handlers;
  std::atomic<bool> stopping{false};

  // The executor of serial methods.
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> jobs;
  bool executor_done = false;
  std::thread executor;

  void run_executor() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait(lk, [&] { return executor_done || !jobs.empty(); });
        if (jobs.empty()) return;
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      job();
    }
  }

  void dispatch(std::string identity, Message m) {
    auto state = std::make_shared<Responder::State>();
    state->outbox = outbox;
    state->identity = std::move(identity);
    state->id = m.id;
    state->method = m.method;
    Responder reply(state);
    if (m.method == kPingMethod) return reply.ok();
    if (m.method == kBusyMethod) {
      nlohmann::json out{{"busy_s", busy_seconds()}};
      if (auto mem = core::process_memory()) {
        out["rss_bytes"] = mem->rss_bytes;
        out["peak_rss_bytes"] = mem->peak_rss_bytes;
      }
      return reply.ok(Payload(std::move(out)));
    }
    if (m.method == kStacksMethod) {
      const auto stacks = core::capture_thread_stacks();
      return reply.ok(Payload(nlohmann::json{{"pid", static_cast<int64_t>(getpid())},
                                             {"threads", core::thread_stacks_json(stacks)},
                                             {"text", core::format_thread_stacks(stacks)}}));
    }
    if (m.method == kLogTailMethod) {
      const auto files = log::files();
      const int64_t lines = std::clamp<int64_t>(m.payload.args.value("lines", int64_t{50}), 1, 2000);
      nlohmann::json out{{"path", files.empty() ? "" : files.front()}, {"lines", nlohmann::json::array()}};
      if (!files.empty()) out["lines"] = core::last_lines(files.front(), static_cast<size_t>(lines));
      return reply.ok(Payload(std::move(out)));
    }
    if (m.method == kShutdownMethod) {
      reply.ok();
      stopping = true;
      return;
    }
    auto it = handlers.find(m.method);
    if (it == handlers.end()) {
      std::string known;
      for (const auto& [name, _] : handlers) known += (known.empty() ? "" : ", ") + name;
      return reply.fail("unknown method '" + m.method + "' (this worker serves: " + known + ")");
    }
    // A handler that throws before answering (or before taking the Responder to answer later)
    // answers with the exception's message.
    auto keep = std::make_shared<Responder>(std::move(reply));
    auto call = [handler = it->second.handler, payload = std::move(m.payload), keep,
                 serial = it->second.mode == RunMode::serial]() mutable {
      // Serial methods are the worker's work (train_step, compute_log_probs, rewards): the step
      // profile counts them busy. Inline ones only take a request and answer later.
      std::optional<BusyScope> busy;
      if (serial) busy.emplace();
      try {
        handler(std::move(payload), *keep);
      } catch (const std::exception& e) {
        if (!keep->answered()) keep->fail(e.what());
        else log::error("rpc handler failed after answering: {}", e.what());
      }
    };
    if (it->second.mode == RunMode::inline_) {
      call();
    } else {
      std::lock_guard<std::mutex> g(mu);
      jobs.push_back(std::move(call));
      cv.notify_one();
    }
  }
};

RpcServer::RpcServer(const std::string& bind) : impl_(std::make_unique<Impl>()) {
  impl_->socket.set(zmq::sockopt::linger, 0);
  impl_->socket.set(zmq::sockopt::router_mandatory, 1);
  try {
    impl_->socket.bind(bind);
  } catch (const zmq::error_t& e) {
    throw Error("rpc: cannot bind " + bind + ": " + e.what());
  }
  impl_->endpoint = impl_->socket.get(zmq::sockopt::last_endpoint);
}

RpcServer::~RpcServer() {
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    impl_->executor_done = true;
    impl_->cv.notify_all();
  }
  if (impl_->executor.joinable()) impl_->executor.join();
}

const std::string& RpcServer::endpoint() const { return impl_->endpoint; }

void RpcServer::on(const std::string& method, Handler handler, RunMode mode) {
  impl_->handlers[method] = {std::move(handler), mode};
}

void RpcServer::on_call(const std::string& method, std::function<Payload(Payload)> fn) {
  on(method, [fn = std::move(fn)](Payload args, Responder& reply) { reply.ok(fn(std::move(args))); });
}

void RpcServer::serve() {
  Impl& s = *impl_;
  s.executor = std::thread([&s] { s.run_executor(); });
  while (!s.stopping) {
    zmq::pollitem_t items[] = {{static_cast<void*>(s.socket), 0, ZMQ_POLLIN, 0},
                               {nullptr, s.outbox->fd(), ZMQ_POLLIN, 0}};
    if (!poll_retrying_eintr(items, 2, std::chrono::milliseconds(200))) continue;
    if (items[1].revents & ZMQ_POLLIN) {
      for (auto& frames : s.outbox->take()) {
        try {
          send_frames(s.socket, frames);
        } catch (const zmq::error_t& e) {
          // EHOSTUNREACH (router_mandatory): the caller went away; its answer has no reader.
          log::debug("rpc: reply dropped: {}", e.what());
        }
      }
    }
    if (items[0].revents & ZMQ_POLLIN) {
      auto frames = recv_frames(s.socket);
      if (frames.size() < 2) continue;
      std::string identity(static_cast<const char*>(frames[0].data()), frames[0].size());
      Message m;
      try {
        m = decode_message(frames, 1);
      } catch (const std::exception& e) {
        log::warn("rpc: dropping a malformed call: {}", e.what());
        continue;
      }
      if (m.kind != MessageKind::call) continue;
      s.dispatch(std::move(identity), std::move(m));
    }
  }
  // Flush answers already queued (the __shutdown reply among them), giving them a moment to
  // leave before the socket closes.
  s.socket.set(zmq::sockopt::linger, 500);
  for (auto& frames : s.outbox->take()) {
    try {
      send_frames(s.socket, frames);
    } catch (const zmq::error_t&) {
    }
  }
}

void RpcServer::stop() { impl_->stopping = true; }

}  // namespace roll::runtime
