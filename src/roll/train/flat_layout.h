#pragma once
// How the strategy lays parameters out: one *unit* per decoder layer plus one for everything else
// (embeddings, final norm, LM/value head) — the granularity FSDP wraps and ZeRO-3 gathers at.
// Each unit is one flat buffer, padded to a multiple of the world size and split into equal
// contiguous chunks, chunk r owned by rank r (its optimizer state, and from stage 2 its gradient,
// from stage 3 its parameters). Pure data: no tensors, no communication.
#include <cstdint>
#include <string>
#include <vector>

namespace roll::train {

struct FlatParam {
  std::string name;
  std::vector<int64_t> shape;
  int64_t offset = 0;  // in the unit's flat buffer
  int64_t numel = 0;
  size_t index = 0;  // position in the model's named_parameters()
};

struct FlatUnit {
  std::string name;  // "rest" or "layer.<i>"
  int64_t layer = -1;  // decoder layer index, -1 for "rest"
  std::vector<FlatParam> params;
  int64_t numel = 0;   // sum of the parameters
  int64_t padded = 0;  // numel rounded up to a multiple of world_size
  int64_t chunk = 0;   // padded / world_size
};

struct FlatLayout {
  int world_size = 1;
  std::vector<FlatUnit> units;              // units[0] = rest, units[1 + i] = layer i
  std::vector<size_t> reduce_order;         // units in the order backward completes them
  std::vector<int> unit_of_param;           // per named parameter: its unit
  std::vector<int> slot_of_param;           // per named parameter: its index in the unit
  int64_t total_numel() const;
  std::string signature() const;  // names, shapes and world size: checkpoints must match it
};

struct ParamInfo {
  std::string name;
  std::vector<int64_t> shape;
};

// `params` in the model's order; names "model.layers.<i>.*" go to layer unit i.
FlatLayout make_flat_layout(const std::vector<ParamInfo>& params, int64_t num_layers, int world_size);

}  // namespace roll::train
