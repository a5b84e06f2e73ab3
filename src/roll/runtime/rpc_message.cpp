#include "roll/runtime/rpc_message.h"

#include <cstring>
#include <memory>

#include "roll/core/batch_io.h"
#include "roll/core/error.h"
#include "roll/core/json_number.h"

namespace roll::runtime {
namespace {

const char* kind_name(MessageKind k) {
  switch (k) {
    case MessageKind::call: return "call";
    case MessageKind::ok: return "ok";
    case MessageKind::error: return "error";
  }
  return "?";
}

MessageKind parse_kind(const std::string& s) {
  if (s == "call") return MessageKind::call;
  if (s == "ok") return MessageKind::ok;
  if (s == "error") return MessageKind::error;
  throw Error("rpc: unknown message kind '" + s + "'");
}

zmq::message_t frame_of(std::string_view bytes) { return zmq::message_t(bytes.data(), bytes.size()); }

}  // namespace

zmq::context_t& zmq_context() {
  static zmq::context_t ctx(1);
  return ctx;
}

std::vector<zmq::message_t> encode_message(const Message& m) {
  nlohmann::json header = {{"id", m.id}, {"kind", kind_name(m.kind)}, {"method", m.method},
                           {"args", m.payload.args}, {"has_batch", m.payload.batch.has_value()}};
  if (m.kind == MessageKind::error) header["error"] = m.error;
  std::vector<uint8_t> packed = nlohmann::json::to_msgpack(header);
  std::vector<zmq::message_t> frames;
  frames.emplace_back(packed.data(), packed.size());
  if (m.payload.batch) {
    BatchFrames bf = to_frames(*m.payload.batch);
    frames.push_back(frame_of(bf.header));
    for (size_t i = 0; i < bf.tensors.size(); ++i) frames.push_back(frame_of(bf.tensor_bytes(i)));
  }
  return frames;
}

Message decode_message(std::vector<zmq::message_t>& frames, size_t first) {
  if (frames.size() <= first) throw Error("rpc: empty message");
  const auto& h = frames[first];
  nlohmann::json header;
  try {
    header = nlohmann::json::from_msgpack(static_cast<const uint8_t*>(h.data()),
                                          static_cast<const uint8_t*>(h.data()) + h.size());
  } catch (const std::exception& e) {
    throw Error(std::string("rpc: malformed message header: ") + e.what());
  }
  Message m;
  bool has_batch = false;
  try {
    m.id = json_integer<uint64_t>(header.at("id"), "id");
    m.kind = parse_kind(header.at("kind").get<std::string>());
    m.method = header.value("method", "");
    m.error = header.value("error", "");
    m.payload.args = header.value("args", nlohmann::json::object());
    has_batch = header.value("has_batch", false);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("rpc: malformed message header (a peer of another rollcpp version?): ") + e.what());
  }
  if (has_batch) {
    if (frames.size() < first + 2) throw Error("rpc: message of '" + m.method + "' lacks its batch frames");
    // The received frames own the bytes: keep them alive with the batch instead of copying.
    auto owner = std::make_shared<std::vector<zmq::message_t>>();
    for (size_t i = first + 1; i < frames.size(); ++i) owner->push_back(std::move(frames[i]));
    std::vector<std::string_view> buffers;
    for (size_t i = 1; i < owner->size(); ++i)
      buffers.emplace_back(static_cast<const char*>((*owner)[i].data()), (*owner)[i].size());
    std::string_view bh(static_cast<const char*>((*owner)[0].data()), (*owner)[0].size());
    m.payload.batch = from_frames(bh, buffers, owner);
  }
  return m;
}

}  // namespace roll::runtime
