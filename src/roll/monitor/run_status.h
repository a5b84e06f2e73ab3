#pragma once
// `roll status` for the runs of this machine (docs/dashboard.md): each run's step, state and
// per-worker table, read from its dashboard's /api/state; with --stacks every thread's stack of
// its workers (or one worker) from /api/stacks.
#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "roll/monitor/run_record.h"

namespace roll::monitor {

// GET <dashboard_url><path> as JSON; roll::Error naming the URL when it cannot be read.
nlohmann::json fetch_dashboard_json(const std::string& dashboard_url, const std::string& path,
                                    std::chrono::milliseconds timeout);

// The run's report from its /api/state answer.
std::string format_run_status(const RunRecord& run, const nlohmann::json& state);
// The workers' stacks from an /api/stacks answer.
std::string format_run_stacks(const nlohmann::json& stacks);

}  // namespace roll::monitor
