#pragma once
// safetensors read (mmap) and write (single file or sharded with model.safetensors.index.json).
// Bad files never crash: every problem is a roll::Error naming the file and tensor.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "roll/model/safetensors_header.h"  // IWYU pragma: export

namespace roll::model {

// One .safetensors file, memory-mapped. Tensors returned by get() share the mapping (they keep it
// alive); clone before writing to them.
class SafetensorsFile {
 public:
  static std::shared_ptr<SafetensorsFile> open(const std::string& path);
  ~SafetensorsFile();

  const std::string& path() const { return path_; }
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool has(const std::string& name) const;
  at::Tensor get(const std::string& name) const;

 private:
  SafetensorsFile() = default;
  std::string path_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  const uint8_t* data_ = nullptr;  // start of the data section
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
  std::weak_ptr<SafetensorsFile> self_;
};

// All tensors of a model directory: `model.safetensors`, or the shards listed by
// `model.safetensors.index.json`, or every *.safetensors file in it.
class SafetensorsDir {
 public:
  static SafetensorsDir open(const std::string& dir);
  std::vector<std::string> names() const;
  bool has(const std::string& name) const { return where_.count(name) > 0; }
  at::Tensor get(const std::string& name) const;  // error naming the directory and tensor when absent

 private:
  std::string dir_;
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, size_t> where_;
};

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// Writes one file (tensors are written contiguous, in the given order; header padded to 8 bytes).
void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

// Writes `dir/model.safetensors` when everything fits in `max_shard_bytes`, else
// `model-0000k-of-0000n.safetensors` shards and `model.safetensors.index.json`.
void write_safetensors_dir(const std::string& dir, const NamedTensors& tensors, uint64_t max_shard_bytes);

// dtype name <-> ATen scalar type; unknown names are an error naming the file and tensor.
at::ScalarType safetensors_dtype(const std::string& name, const std::string& file, const std::string& tensor);
std::string safetensors_dtype_name(at::ScalarType type);

}  // namespace roll::model
