#pragma once
// Reads a resolved config tree into the typed structs of schema.h (one header per area) through their `visit`.
// Type errors are collected with key, file and line; keys no struct lists are reported as unknown.
#include <string>

#include "roll/config/diagnostics.h"
#include "roll/config/node.h"
#include "roll/config/scalar_read.h"  // IWYU pragma: export
#include "roll/config/schema.h"

namespace roll::config {

// Fills `config` from `root` (a mapping). Errors and unknown keys go to `diag`.
void read_pipeline_config(const NodePtr& root, PipelineConfig& config, Diagnostics& diag);
void read_worker_config(const NodePtr& node, const std::string& path, WorkerConfig& config, Diagnostics& diag);

// Typed config -> tree, for printing (`roll validate`).
NodePtr write_pipeline_config(const PipelineConfig& config);

}  // namespace roll::config
