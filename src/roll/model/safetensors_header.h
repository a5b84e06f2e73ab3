#pragma once
// The JSON parts of the safetensors format, without tensors: a file's header (names, dtypes,
// shapes, byte ranges, metadata) and a sharded model's model.safetensors.index.json. Every problem
// is a roll::Error naming the file and tensor; nothing here trusts a size or offset it read.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace roll::model {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // F32, BF16, F16, I64, ... as in the file
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets into the data section
};

struct SafetensorsHeader {
  uint64_t data_offset = 0;  // where the data section starts in the file (8 + header length)
  std::vector<SafetensorsEntry> entries;  // in header order
  std::map<std::string, std::string> metadata;
};

// Bytes per element of a safetensors dtype name; nullopt for a dtype rollcpp does not read.
std::optional<size_t> safetensors_item_size(std::string_view dtype);

// Parses and checks the header of a whole file's bytes (`path` names it in errors): JSON, known
// dtypes, non-negative shapes whose byte size does not overflow and matches the entry's range,
// ranges inside the data section.
SafetensorsHeader parse_safetensors_header(const uint8_t* bytes, size_t size, const std::string& path);

// model.safetensors.index.json's weight_map as (tensor, shard file) pairs in file order. A shard
// must be a file name inside the model directory (no absolute path, no "..").
std::vector<std::pair<std::string, std::string>> parse_safetensors_index(std::string_view text,
                                                                         const std::string& path);

}  // namespace roll::model
