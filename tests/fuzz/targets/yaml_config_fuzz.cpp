// A pipeline config as `roll rlvr --config_path D --config_name main` reads it: YAML, Hydra
// defaults (part 2 is the included file), ${...} interpolation, typing, derivation and checks.
#include "../fuzz_target.h"
#include "roll/config/load.h"

ROLL_FUZZ_TARGET(yaml_config) {
  const auto parts = roll::fuzz::split_parts(bytes, 2);
  roll::fuzz::write_scratch("cfg/main.yaml", parts[0]);
  roll::fuzz::write_scratch("cfg/base.yaml", parts[1]);
  roll::config::LoadRequest request;
  request.compose.config_path = roll::fuzz::scratch_dir() + "/cfg";
  request.compose.config_name = "main";
  request.platform = roll::config::Platform::cpu;
  (void)roll::config::load_config(request);
}
