// The files a resume reads first: the pipeline's worker_state_pipeline.json (part 1) and a cluster checkpoint's
// manifest.json (part 2), beside one file the manifest may list.
#include <filesystem>

#include "../fuzz_target.h"
#include "roll/core/error.h"
#include "roll/pipeline/pipeline_state.h"
#include "roll/train/checkpoint.h"

ROLL_FUZZ_TARGET(checkpoint_state) {
  const auto parts = roll::fuzz::split_parts(bytes, 2);
  roll::fuzz::write_scratch("ckpt/pipeline/checkpoint-3/pipeline/worker_state_pipeline.json", parts[0]);
  roll::fuzz::write_scratch("ckpt/actor/checkpoint-3/manifest.json", parts[1]);
  roll::fuzz::write_scratch("ckpt/actor/checkpoint-3/model.safetensors", "0123456789");
  (void)roll::train::checkpoint_problem(roll::fuzz::scratch_dir() + "/ckpt/actor/checkpoint-3");
  (void)roll::pipeline::load_pipeline_state(roll::fuzz::scratch_dir() + "/ckpt/pipeline/checkpoint-3");
}
