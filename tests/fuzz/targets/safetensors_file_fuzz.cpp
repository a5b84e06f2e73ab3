// A safetensors file as a user's model directory holds it: 8-byte header length, JSON header,
// tensor bytes. Every tensor the header lists is read.
#include <ATen/core/Tensor.h>

#include "../fuzz_target.h"
#include "roll/model/safetensors.h"

ROLL_FUZZ_TARGET(safetensors_file) {
  const std::string path = roll::fuzz::write_scratch("model.safetensors", bytes);
  auto file = roll::model::SafetensorsFile::open(path);
  for (const auto& entry : file->entries()) {
    at::Tensor t = file->get(entry.name);
    (void)t.numel();
  }
}
