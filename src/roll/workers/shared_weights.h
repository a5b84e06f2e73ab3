#pragma once
// One model's weights in a shared-memory file (under /dev/shm) that train rank 0 writes and every
// infer worker of its node maps (docs/runtime.md, "Weight sync"). The file is created once, sized
// for the model, and rewritten in place at each update, so no page is allocated or faulted in
// again after the first update and no file is re-read: the writer copies each tensor in once, each
// engine copies it out once into its own weights.
//
// Layout (little-endian):
//   0   char[8]  "ROLLWTS1"
//   8   u64      length of the JSON table that follows the fixed part
//   16  i64      version: the weight version last published, or -1 while a write is in progress
//   24  u64      data offset (4096-aligned)
//   32  JSON     [{"name", "dtype" (safetensors names), "shape", "offset" (into data), "nbytes"}, ...]
// Readers check the version before and after copying out, so a torn read is an error, not a model.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "roll/model/safetensors.h"

namespace roll::workers {

class SharedWeights : public std::enable_shared_from_this<SharedWeights> {
 public:
  // The writer: creates (replacing) `path` with room for `layout`'s tensors (names, dtypes and shapes
  // are fixed from then on) and maps it with every page populated. The creator unlinks it when destroyed.
  static std::shared_ptr<SharedWeights> create(const std::string& path, const model::NamedTensors& layout);
  // A reader: maps an existing file read-only; roll::Error naming the file when it is not one of these.
  static std::shared_ptr<SharedWeights> open(const std::string& path);
  ~SharedWeights();
  SharedWeights(const SharedWeights&) = delete;
  SharedWeights& operator=(const SharedWeights&) = delete;

  // Same names, dtypes and shapes in the same order as the file's table.
  bool matches(const model::NamedTensors& weights) const;
  // Copies `weights` in (they must match) and then publishes `version` (>= 0).
  void write(const model::NamedTensors& weights, int64_t version);
  // False once the file at path() is another one (the writer re-created it for another layout).
  bool is_current() const;
  // The published version; -1 while a write is in progress.
  int64_t version() const;
  // Tensors over the mapping, no copy; each keeps this object alive. A reader's mapping is
  // read-only (a write faults): anything that merges into weights copies them first.
  model::NamedTensors views();

  const std::string& path() const { return path_; }
  int64_t data_bytes() const { return data_bytes_; }

 private:
  struct Entry {
    std::string name;
    at::ScalarType dtype;
    std::vector<int64_t> shape;
    int64_t offset = 0, nbytes = 0;  // into the data section
  };
  SharedWeights() = default;
  void map(int fd, size_t size, bool writable);

  std::string path_;
  bool owner_ = false;
  uint64_t inode_ = 0;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  int64_t data_bytes_ = 0;
  uint8_t* data_ = nullptr;
  std::vector<Entry> table_;
};

}  // namespace roll::workers
