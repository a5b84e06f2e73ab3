// An RPC message from a peer process: ZeroMQ frames (msgpack header, then a batch's header and
// tensor frames), as rpc_server and rpc_client decode them.
#include <zmq.hpp>

#include "../fuzz_target.h"
#include "roll/runtime/rpc_message.h"

ROLL_FUZZ_TARGET(rpc_message) {
  std::vector<zmq::message_t> frames;
  for (std::string_view part : roll::fuzz::split_parts(bytes, 8)) {
    if (part.empty() && !frames.empty()) break;
    frames.emplace_back(part.data(), part.size());
  }
  auto message = roll::runtime::decode_message(frames, 0);
  if (message.payload.batch) (void)message.payload.batch->size();
}
