#pragma once
// Train -> infer weight sync (docs/runtime.md; docs/design.md section 3).
//   broadcast: train rank 0 is rank 0 of a "model update" process group whose other ranks are the
//     infer workers; it sends the names, dtypes and shapes first, then the tensors packed into
//     byte buckets of at most model_update_buffer_size_mb (one collective per bucket, any dtype:
//     bf16 moves as bytes). Workers on other nodes, or on other devices, take this path.
//   shared memory: a colocated infer worker (same node and device as the sender) reads the
//     weights the sender wrote as safetensors under /dev/shm (renamed into place when complete).
// Both are bit-exact.
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "roll/model/safetensors.h"

namespace roll::comm {
class ProcessGroup;
class Store;
}

namespace roll::workers {

struct SyncStats {
  int64_t tensors = 0;
  int64_t bytes = 0;
  int64_t buckets = 0;
  double seconds = 0;
};

// Joins the model-update group the driver's setup_model_update call names:
// args {group, world_size, timeout_s?}; `rank` 0 is the sender. Collective over the group.
std::shared_ptr<comm::ProcessGroup> join_model_update_group(const std::shared_ptr<comm::Store>& store,
                                                            const nlohmann::json& args, int rank);

// Every rank of `group` calls it; `root` passes its weights, the others get them (nullptr in).
model::NamedTensors broadcast_weights(comm::ProcessGroup& group, int root, const model::NamedTensors* weights,
                                      int64_t bucket_bytes, SyncStats* stats = nullptr);

// Writes `weights` as one safetensors file into `dir` (replaced atomically); returns the file.
std::string write_weights_file(const std::string& dir, const model::NamedTensors& weights);
model::NamedTensors read_weights_file(const std::string& file);

// {name: FNV-1a 64 of the tensor's bytes (hex), ...}: cheap bit-exactness checks across processes.
nlohmann::json weights_digest(const model::NamedTensors& weights);

}  // namespace roll::workers
