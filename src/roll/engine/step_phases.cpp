#include "roll/engine/step_phases.h"

namespace roll::engine {

const char* step_phase_name(StepPhase p) {
  static constexpr const char* kNames[kNumStepPhases] = {"embed",     "norm",   "qkv",     "rope",   "attention",
                                                         "o_proj",    "gate_up", "swiglu", "down",   "lm_head"};
  return kNames[static_cast<size_t>(p)];
}

}  // namespace roll::engine
