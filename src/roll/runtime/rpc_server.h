#pragma once
// The worker side of a call (docs/design.md section 3): a ROUTER socket served by one thread. Methods are
// registered by name with how they run:
//   serial  - on one executor thread, in arrival order (ROLL's workers with max_concurrency 1:
//             train_step, compute_log_probs, checkpoint, ...);
//   inline  - on the socket thread; must not block: it keeps the Responder and answers later from
//             any thread (the infer worker's generate_request answers from its engine loop).
// Replies may be sent from any thread; they are queued and written by the socket thread.
#include <functional>
#include <memory>
#include <string>

#include "roll/runtime/rpc_message.h"

namespace roll::runtime {

class Responder {
 public:
  Responder() = default;
  Responder(Responder&&) noexcept = default;
  Responder& operator=(Responder&&) noexcept = default;
  ~Responder();  // an unanswered call gets an error reply, never silence

  void ok(Payload result = {});
  void fail(const std::string& error);
  bool answered() const { return !state_; }

  struct State;
  explicit Responder(std::shared_ptr<State> s) : state_(std::move(s)) {}

 private:
  std::shared_ptr<State> state_;
};

enum class RunMode { serial, inline_ };

using Handler = std::function<void(Payload args, Responder& reply)>;

class RpcServer {
 public:
  // bind: a ZeroMQ address such as "tcp://127.0.0.1:*" (port chosen by the system).
  explicit RpcServer(const std::string& bind);
  ~RpcServer();

  // The address others connect to (port resolved).
  const std::string& endpoint() const;
  // Register before serve(). A serial handler that throws answers with the exception's message.
  void on(const std::string& method, Handler handler, RunMode mode = RunMode::serial);
  // Convenience for serial methods that compute a result.
  void on_call(const std::string& method, std::function<Payload(Payload)> fn);

  // Serves until stop() or a `__shutdown` call (answered first). Built in: `__ping`, `__busy`
  // (serial handlers run inside a BusyScope).
  void serve();
  void stop();  // from any thread

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace roll::runtime
