#pragma once
// What travels between processes on the control plane (docs/design.md section 1): a msgpack header
// (call id, kind, method, JSON arguments) and, when a call carries a Batch, its header and raw
// tensor frames (never JSON). One multipart ZeroMQ message per call or reply.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "roll/core/batch.h"

namespace roll::runtime {

// Arguments or results of a call: JSON values plus an optional Batch.
struct Payload {
  nlohmann::json args = nlohmann::json::object();
  std::optional<Batch> batch;

  Payload() = default;
  explicit Payload(nlohmann::json a) : args(std::move(a)) {}
  explicit Payload(Batch b) : batch(std::move(b)) {}
  Payload(nlohmann::json a, Batch b) : args(std::move(a)), batch(std::move(b)) {}
};

// Methods every RpcServer serves itself, whatever the role (the roles' own: workers/rpc_methods.h).
inline constexpr char kPingMethod[] = "__ping";          // nothing -> nothing
inline constexpr char kShutdownMethod[] = "__shutdown";  // nothing -> nothing, then serve() returns
// nothing -> {"busy_s": seconds the worker spent in serial handlers and engine steps (roll/core/busy_clock.h)}
inline constexpr char kBusyMethod[] = "__busy";
// nothing -> {"pid", "threads": every thread's stack (roll/core/thread_stacks.h), "text": the same formatted}.
// Answered on the socket thread, so a worker whose serial handler is stuck still answers.
inline constexpr char kStacksMethod[] = "__stacks";
// {"lines": n} -> {"path", "lines": the last n lines of the process's log file (log::add_file)}: how the
// dashboard on the head reads the logs of workers on other nodes. Answered on the socket thread.
inline constexpr char kLogTailMethod[] = "__log_tail";

enum class MessageKind { call, ok, error };

struct Message {
  uint64_t id = 0;
  MessageKind kind = MessageKind::call;
  std::string method;  // calls; replies repeat it for error messages
  std::string error;   // kind == error
  Payload payload;
};

// Frames of one message (without the ROUTER identity frame).
std::vector<zmq::message_t> encode_message(const Message& message);
// Throws roll::Error saying what is malformed.
Message decode_message(std::vector<zmq::message_t>& frames, size_t first = 0);

// The process-wide ZeroMQ context.
zmq::context_t& zmq_context();

}  // namespace roll::runtime
