#pragma once
// What to change when a device overflows (docs/memory.md, "Advice"): the user's guide's OOM advice
// computed for the config at hand (gradient checkpointing, ZeRO-3, one sample per micro-batch with
// the accumulation that keeps the global batch, optimizer offload, the engine's memory share and a
// max_model_len that fits), each tried by planning again with it as an override, and ranked: the
// changes that fit alone first, in the order that costs the least speed, then the smallest
// combination that fits when none does alone.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "roll/config/schema.h"
#include "roll/memory/memory_plan.h"

namespace roll::memory {

struct Advice {
  std::vector<std::string> overrides;  // key=value, as `roll validate` accepts them
  std::string why;
  int64_t peak_bytes = 0;  // after the change, the largest peak of the devices that overflowed
  bool fits = false;       // every device fits after it
};

// Plans the config again with extra overrides; nullopt when the overrides do not load.
using Replan = std::function<std::optional<MemoryPlan>(const std::vector<std::string>& overrides)>;

std::vector<Advice> memory_advice(const config::PipelineConfig& config, const MemoryPlan& plan, const Replan& replan);

// The largest device (or node) peak of a plan.
int64_t largest_peak(const MemoryPlan& plan);

}  // namespace roll::memory
