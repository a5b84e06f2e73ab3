// model.safetensors.index.json beside one valid shard: the index decides which file each tensor is in.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <cstring>

#include "../fuzz_target.h"
#include "roll/model/safetensors.h"

namespace {

// A shard holding w (F32 2x3) and b (F32 3), written byte for byte.
std::string shard_bytes() {
  std::string header = R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                       R"("b":{"dtype":"F32","shape":[3],"data_offsets":[24,36]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + std::string(36, '\0');
}

}  // namespace

ROLL_FUZZ_TARGET(safetensors_index) {
  static const std::string dir = [] {
    roll::fuzz::write_scratch("index_model/model-00001-of-00001.safetensors", shard_bytes());
    return roll::fuzz::scratch_dir() + "/index_model";
  }();
  roll::fuzz::write_scratch("index_model/model.safetensors.index.json", bytes);
  auto files = roll::model::SafetensorsDir::open(dir);
  for (const auto& name : files.names()) (void)files.get(name).numel();
}
