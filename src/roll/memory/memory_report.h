#pragma once
// The memory plan as `roll validate` prints it: a table per device (alike devices once), each
// worker's parts, the per-phase totals, the capacity, the verdict and the advice; and the same as
// JSON for tools (`roll validate --json`).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "roll/memory/memory_advice.h"
#include "roll/memory/memory_plan.h"

namespace roll::memory {

std::string format_memory_plan(const MemoryPlan& plan, const std::vector<Advice>& advice);
nlohmann::json memory_plan_json(const MemoryPlan& plan, const std::vector<Advice>& advice);

}  // namespace roll::memory
