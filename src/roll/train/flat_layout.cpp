#include "roll/train/flat_layout.h"

#include <fmt/format.h>

#include "roll/core/error.h"

namespace roll::train {

int64_t FlatLayout::total_numel() const {
  int64_t n = 0;
  for (const FlatUnit& u : units) n += u.numel;
  return n;
}

std::string FlatLayout::signature() const {
  std::string s = fmt::format("world={};", world_size);
  for (const FlatUnit& u : units) {
    s += u.name + "[";
    for (const FlatParam& p : u.params) s += fmt::format("{}:{};", p.name, fmt::join(p.shape, "x"));
    s += "]";
  }
  return s;
}

FlatLayout make_flat_layout(const std::vector<ParamInfo>& params, int64_t num_layers, int world_size) {
  if (world_size < 1) throw Error("flat layout: world size must be >= 1");
  FlatLayout L;
  L.world_size = world_size;
  L.units.resize(1 + num_layers);
  L.units[0].name = "rest";
  for (int64_t i = 0; i < num_layers; ++i) {
    L.units[1 + i].name = fmt::format("layer.{}", i);
    L.units[1 + i].layer = i;
  }
  const std::string prefix = "model.layers.";
  for (size_t k = 0; k < params.size(); ++k) {
    const ParamInfo& p = params[k];
    int unit = 0;
    if (p.name.rfind(prefix, 0) == 0) {
      size_t end = p.name.find('.', prefix.size());
      int64_t layer = std::stoll(p.name.substr(prefix.size(), end - prefix.size()));
      if (layer < 0 || layer >= num_layers)
        throw Error(fmt::format("parameter '{}' names layer {} of a {}-layer model", p.name, layer, num_layers));
      unit = static_cast<int>(1 + layer);
    }
    FlatUnit& u = L.units[unit];
    FlatParam fp;
    fp.name = p.name;
    fp.shape = p.shape;
    fp.numel = 1;
    for (int64_t d : p.shape) fp.numel *= d;
    fp.offset = u.numel;
    fp.index = k;
    u.numel += fp.numel;
    L.unit_of_param.push_back(unit);
    L.slot_of_param.push_back(static_cast<int>(u.params.size()));
    u.params.push_back(fp);
  }
  for (FlatUnit& u : L.units) {
    u.padded = (u.numel + world_size - 1) / world_size * world_size;
    u.chunk = u.padded / world_size;
  }
  // Backward finishes the last layer first and the embeddings (in "rest") last.
  for (int64_t i = num_layers; i >= 1; --i) L.reduce_order.push_back(static_cast<size_t>(i));
  L.reduce_order.push_back(0);
  return L;
}

}  // namespace roll::train
