#include "roll/model/safetensors_header.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "roll/core/error.h"

namespace roll::model {
namespace {

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw Error(fmt::format("safetensors file {}: {}", file, what));
}

}  // namespace

std::optional<size_t> safetensors_item_size(std::string_view dtype) {
  static const std::pair<std::string_view, size_t> kSizes[] = {
      {"F64", 8}, {"F32", 4}, {"BF16", 2}, {"F16", 2}, {"I64", 8}, {"I32", 4},
      {"I16", 2}, {"I8", 1},  {"U8", 1},   {"BOOL", 1}};
  for (const auto& [name, size] : kSizes)
    if (name == dtype) return size;
  return std::nullopt;
}

SafetensorsHeader parse_safetensors_header(const uint8_t* bytes, size_t size, const std::string& path) {
  if (size < 8)
    fail(path, fmt::format("truncated: {} bytes, a safetensors file starts with an 8-byte header size", size));
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes, 8);  // little-endian on every platform we build for
  if (header_len > size - 8)
    fail(path, fmt::format("header claims {} bytes but the file has only {} after the size field", header_len,
                           size - 8));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes + 8, bytes + 8 + header_len);
  } catch (const std::exception& e) {
    fail(path, fmt::format("header is not valid JSON: {}", e.what()));
  }
  if (!header.is_object()) fail(path, "header is not a JSON object");
  SafetensorsHeader out;
  out.data_offset = 8 + header_len;
  const uint64_t data_size = size - out.data_offset;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (it.value().is_object())
        for (auto m = it.value().begin(); m != it.value().end(); ++m)
          if (m.value().is_string()) out.metadata[m.key()] = m.value().get<std::string>();
      continue;
    }
    const auto& v = it.value();
    SafetensorsEntry e;
    e.name = it.key();
    try {
      e.dtype = v.at("dtype").get<std::string>();
      e.shape = v.at("shape").get<std::vector<int64_t>>();
      auto off = v.at("data_offsets").get<std::vector<uint64_t>>();
      if (off.size() != 2) throw std::runtime_error("data_offsets must have 2 entries");
      e.begin = off[0];
      e.end = off[1];
    } catch (const std::exception& ex) {
      fail(path, fmt::format("tensor '{}' has a malformed header entry: {}", e.name, ex.what()));
    }
    const auto item = safetensors_item_size(e.dtype);
    if (!item)
      fail(path, fmt::format("tensor '{}' has unsupported dtype '{}' (supported: F32, BF16, F16, F64, I64, I32, I16, "
                             "I8, U8, BOOL)",
                             e.name, e.dtype));
    // The byte size, refusing any product that overflows (a header could otherwise claim a huge
    // shape whose size wraps around to the length of its range).
    uint64_t bytes_needed = *item;
    bool overflow = false;
    for (int64_t d : e.shape) {
      if (d < 0) fail(path, fmt::format("tensor '{}' has a negative dimension", e.name));
      if (d != 0 && bytes_needed > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) overflow = true;
      bytes_needed *= static_cast<uint64_t>(d);
    }
    if (overflow) fail(path, fmt::format("tensor '{}' has a shape too large to address", e.name));
    if (e.end < e.begin || e.end > data_size)
      fail(path, fmt::format("tensor '{}' claims bytes [{}, {}) but the data section has {} bytes (truncated file or "
                             "a header that lies about offsets)",
                             e.name, e.begin, e.end, data_size));
    if (e.end - e.begin != bytes_needed)
      fail(path, fmt::format("tensor '{}': {} bytes for its shape of {} ({} bytes expected)", e.name,
                             e.end - e.begin, e.dtype, bytes_needed));
    out.entries.push_back(std::move(e));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> parse_safetensors_index(std::string_view text,
                                                                         const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw Error(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw Error(fmt::format("{}: has no weight_map object", path));
  std::vector<std::pair<std::string, std::string>> out;
  for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
    if (!it.value().is_string())
      throw Error(fmt::format("{}: weight_map['{}'] is {}, not a shard file name", path, it.key(), it.value().dump()));
    const std::string shard = it.value().get<std::string>();
    const std::filesystem::path p(shard);
    bool escapes = shard.empty() || p.is_absolute();
    for (const auto& part : p) escapes = escapes || part == "..";
    if (escapes)
      throw Error(fmt::format("{}: weight_map['{}'] = '{}' is not a file inside the model directory", path, it.key(),
                              shard));
    out.emplace_back(it.key(), shard);
  }
  return out;
}

}  // namespace roll::model
