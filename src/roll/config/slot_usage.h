#pragma once
// Which device slots each phase of an RL step keeps working, from the placement plan alone
// (docs/runtime.md, "Idle slots"): `roll validate` names the slots a phase leaves idle and, on
// CPU, suggests the colocated mapping, where both actor roles hold every slot and each phase runs
// on all of them in turn.
#include <string>
#include <vector>

#include "roll/config/placement.h"
#include "roll/config/schema.h"

namespace roll::config {

struct PhaseSlots {
  std::string phase;                  // generate (rollout), log_probs, train
  std::vector<std::string> clusters;  // the started clusters with devices that work in it
  std::vector<std::string> idle;      // "node N device D (holds actor_train)" for each slot that waits
};

// The phases of an RLVR or agentic step and their idle slots; empty for SFT (one cluster) and for
// placements without devices.
std::vector<PhaseSlots> phase_slot_usage(const PipelineConfig& config, const PlacementPlan& plan);

// The lines `roll validate` prints about them on CPU: one per phase that leaves slots idle, then
// the suggestion. Empty when every phase uses every slot (or off CPU).
std::vector<std::string> idle_slot_advice(const PipelineConfig& config, const PlacementPlan& plan);

}  // namespace roll::config
