// A model directory's config.json and generation_config.json (HF layout).
#include "../fuzz_target.h"
#include "roll/core/error.h"
#include "roll/model/hf_config.h"

ROLL_FUZZ_TARGET(hf_config) {
  const auto parts = roll::fuzz::split_parts(bytes, 2);
  const std::string config = roll::fuzz::write_scratch("hf/config.json", parts[0]);
  const std::string generation = roll::fuzz::write_scratch("hf/generation_config.json", parts[1]);
  try {
    (void)roll::model::GenerationConfig::load(generation);
  } catch (const roll::Error&) {
  }
  auto model = roll::model::ModelConfig::load(config);
  (void)model.to_json();
}
