#pragma once
// The caller's side: a DEALER socket to one server endpoint, owned by one thread, so call() is
// safe from any thread. Results come back as futures. When the peer is known dead (the driver saw
// the worker process exit), fail_all() fails every pending and later call with that reason:
// death is never inferred from the socket (docs/design.md section 3).
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "roll/runtime/rpc_message.h"

namespace roll::runtime {

class RpcClient {
 public:
  // peer: a name for error messages, e.g. "actor_train-1 (cluster actor_train, rank 1)".
  RpcClient(const std::string& endpoint, std::string peer);
  ~RpcClient();

  // A failed call (the handler threw, the peer is dead) sets a roll::Error naming the peer and method.
  std::future<Payload> call(const std::string& method, Payload args = {});
  // The callback form, for forwarding without a waiting thread: `done` runs on the client's
  // thread (keep it short) with the result, or with the error message when the call failed.
  using Callback = std::function<void(Payload* result, const std::string& error)>;
  void call_async(const std::string& method, Payload args, Callback done);
  // call() and wait; a timeout is a roll::Error naming the peer, the method and the time.
  Payload call_sync(const std::string& method, Payload args, std::chrono::milliseconds timeout);

  // Fails every pending call with `reason`; later calls fail at once without being sent.
  void fail_all(const std::string& reason);
  bool failed() const;  // fail_all was called: nothing more reaches the peer
  const std::string& peer() const;
  size_t pending() const;

  // What the hang watchdog and the dashboard read (docs/runtime.md, "Hang watchdog").
  struct PendingCall {
    uint64_t id = 0;
    std::string method;
    std::chrono::steady_clock::time_point started;
  };
  std::vector<PendingCall> pending_calls() const;
  // How long the answered calls of `method` took, in seconds (the most recent kRecentCalls).
  static constexpr size_t kRecentCalls = 64;
  std::vector<double> completed_seconds(const std::string& method) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Waits for a future up to `timeout`; on timeout a roll::Error "<what> timed out after N s".
Payload wait_result(std::future<Payload>& f, std::chrono::milliseconds timeout, const std::string& what);

}  // namespace roll::runtime
