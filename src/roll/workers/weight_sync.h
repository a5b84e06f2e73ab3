#pragma once
// Train -> infer weight sync (docs/runtime.md; docs/design.md section 3).
//   broadcast: train rank 0 is rank 0 of a "model update" process group whose other ranks are the
//     infer workers; it sends the names, dtypes and shapes first, then the tensors packed into
//     byte buckets of at most model_update_buffer_size_mb (one collective per bucket, any dtype:
//     bf16 moves as bytes). Workers on other nodes, or on other devices, take this path.
//   shared memory: an infer worker on the sender's node maps the file the sender rewrites in place
//     at each update (shared_weights.h) and copies the weights out once.
// Both are bit-exact. Each update carries a weight version (the pipeline step whose weights they
// are); the engine stamps every token it samples with it.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>
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
// Pipelined: the sender packs bucket i+1 while bucket i is on the wire, a receiver unpacks bucket
// i while bucket i+1 is on the wire.
model::NamedTensors broadcast_weights(comm::ProcessGroup& group, int root, const model::NamedTensors* weights,
                                      int64_t bucket_bytes, SyncStats* stats = nullptr);

// Where a receiver puts one tensor: a tensor of that name, dtype and shape (an engine's own weight),
// or an error naming it.
using WeightDestination = std::function<at::Tensor(const std::string& name, at::ScalarType dtype,
                                                   const std::vector<int64_t>& shape)>;
// A receiving rank of broadcast_weights that writes each tensor straight into `destination(...)`.
void receive_weights_into(comm::ProcessGroup& group, int root, const WeightDestination& destination,
                          int64_t bucket_bytes, SyncStats* stats = nullptr);

// {name: FNV-1a 64 of the tensor's bytes (hex), ...}: cheap bit-exactness checks across processes.
nlohmann::json weights_digest(const model::NamedTensors& weights);

}  // namespace roll::workers
