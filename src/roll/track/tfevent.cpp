#include "roll/track/tfevent.h"

#include <cstring>
#include <type_traits>

#include "roll/track/crc32c.h"

namespace roll::track::tfevent {
namespace {

// Protobuf wire format: a key is (field << 3 | wire type); integers are base-128 varints and
// fixed-width numbers little-endian, so the bytes are the same on any host.
std::string le_bytes(uint64_t v, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  return s;
}

enum Wire : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

class ProtoBuilder {
 public:
  ProtoBuilder& varint(int field, uint64_t v) {
    key(field, kVarint);
    put_varint(v);
    return *this;
  }
  // double -> fixed64, float -> fixed32.
  template <typename F>
  ProtoBuilder& fixed(int field, F v) {
    static_assert(sizeof(F) == 4 || sizeof(F) == 8);
    std::conditional_t<sizeof(F) == 8, uint64_t, uint32_t> bits;
    std::memcpy(&bits, &v, sizeof bits);
    key(field, sizeof(F) == 8 ? kFixed64 : kFixed32);
    out_ += le_bytes(bits, sizeof(F));
    return *this;
  }
  ProtoBuilder& bytes(int field, std::string_view s) {
    key(field, kLengthDelimited);
    put_varint(s.size());
    out_.append(s);
    return *this;
  }
  const std::string& str() const { return out_; }

 private:
  void key(int field, Wire wire) { put_varint((static_cast<uint64_t>(field) << 3) | wire); }
  void put_varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7F) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  std::string out_;
};

// Field numbers (tensorflow/core/framework/summary.proto, tensor.proto, types.proto,
// tensorboard/plugins/hparams/plugin_data.proto, google/protobuf/struct.proto).
constexpr int kEventWallTime = 1, kEventStep = 2, kEventFileVersion = 3, kEventSummary = 5;
constexpr int kSummaryValue = 1;
constexpr int kValueTag = 1, kValueSimple = 2, kValueTensor = 8, kValueMetadata = 9;
constexpr int kMetadataPluginData = 1, kPluginName = 1, kPluginContent = 2;
constexpr int kTensorDtype = 1, kTensorShape = 2, kTensorStringVal = 8, kDtString = 7;
constexpr int kShapeDim = 2, kDimSize = 1;
constexpr int kHparamsSessionStart = 3, kSessionHparams = 1, kSessionStartTime = 5;
constexpr int kMapKey = 1, kMapValue = 2;
constexpr int kStructNumber = 2, kStructString = 3, kStructBool = 4;

std::string plugin_metadata(std::string_view plugin, std::string_view content) {
  ProtoBuilder data;
  data.bytes(kPluginName, plugin);
  if (!content.empty()) data.bytes(kPluginContent, content);
  return ProtoBuilder().bytes(kMetadataPluginData, data.str()).str();
}

// google.protobuf.Value of a scalar JSON value.
std::string struct_value(const nlohmann::json& v) {
  ProtoBuilder b;
  if (v.is_boolean()) b.varint(kStructBool, v.get<bool>() ? 1 : 0);
  else if (v.is_number()) b.fixed(kStructNumber, v.get<double>());
  else if (v.is_string()) b.bytes(kStructString, v.get<std::string>());
  else b.bytes(kStructString, v.dump());
  return b.str();
}

}  // namespace

std::string scalar_value(std::string_view tag, float value) {
  return ProtoBuilder().bytes(kValueTag, tag).fixed(kValueSimple, value).str();
}

std::string text_value(std::string_view tag, std::string_view text) {
  const std::string shape = ProtoBuilder().bytes(kShapeDim, ProtoBuilder().varint(kDimSize, 1).str()).str();
  const std::string tensor =
      ProtoBuilder().varint(kTensorDtype, kDtString).bytes(kTensorShape, shape).bytes(kTensorStringVal, text).str();
  return ProtoBuilder()
      .bytes(kValueTag, tag)
      .bytes(kValueTensor, tensor)
      .bytes(kValueMetadata, plugin_metadata("text", ""))
      .str();
}

std::string hparams_value(const nlohmann::json& flat, double start_time_secs) {
  ProtoBuilder session;
  for (const auto& [name, v] : flat.items())
    session.bytes(kSessionHparams, ProtoBuilder().bytes(kMapKey, name).bytes(kMapValue, struct_value(v)).str());
  session.fixed(kSessionStartTime, start_time_secs);
  // HParamsPluginData.version is 0 (the default, so not written).
  const std::string plugin_data = ProtoBuilder().bytes(kHparamsSessionStart, session.str()).str();
  return ProtoBuilder()
      .bytes(kValueTag, "_hparams_/session_start_info")
      .bytes(kValueMetadata, plugin_metadata("hparams", plugin_data))
      .str();
}

std::string file_version_event(double wall_time) {
  return ProtoBuilder().fixed(kEventWallTime, wall_time).bytes(kEventFileVersion, "brain.Event:2").str();
}

std::string summary_event(double wall_time, int64_t step, const std::vector<std::string>& values) {
  ProtoBuilder summary;
  for (const auto& v : values) summary.bytes(kSummaryValue, v);
  return ProtoBuilder()
      .fixed(kEventWallTime, wall_time)
      .varint(kEventStep, static_cast<uint64_t>(step))  // int64: negatives as 10-byte two's complement
      .bytes(kEventSummary, summary.str())
      .str();
}

std::string frame_record(std::string_view data) {
  const std::string header = le_bytes(data.size(), 8);
  std::string out = header + le_bytes(masked_crc32c(header), 4);
  out.append(data);
  return out + le_bytes(masked_crc32c(data), 4);
}

}  // namespace roll::track::tfevent
