#pragma once
// The one entry point from YAML to a validated config: compose -> interpolate -> type -> derive
// -> check. Throws ConfigErrors listing every problem; warnings are returned, not printed.
#include <optional>
#include <string>
#include <vector>

#include "roll/config/compose.h"
#include "roll/config/diagnostics.h"
#include "roll/config/platform.h"
#include "roll/config/schema.h"

namespace roll::config {

struct LoadRequest {
  ComposeRequest compose;
  std::optional<PipelineKind> kind;      // forced by `roll rlvr|agentic|sft`; else detected from the keys
  std::optional<Platform> platform;      // else default_platform()
  std::optional<int> devices_per_node;   // overrides num_gpus_per_node (docs/design.md section 4, quirk 1)
  bool pure_opd = false;  // `roll opd`: is_pure_opd forced, as ROLL's OPD launcher does (config/opd.h)
};

struct LoadedConfig {
  std::string file;
  NodePtr composed;  // the config as written: includes and overrides applied, not interpolated
  NodePtr resolved;  // the composed and interpolated tree, before typing
  PipelineConfig config;
  Platform platform = Platform::cpu;
  std::vector<Diagnostic> warnings;  // unknown keys come first, as one entry
};

LoadedConfig load_config(const LoadRequest& request);

// Detects the pipeline from the keys present (an on-policy distillation config runs the RLVR
// pipeline, or the agentic one by pure_opd_pipeline_type).
PipelineKind detect_pipeline_kind(const NodePtr& resolved);

// Derivation and checks on an already typed config (exposed for tests).
void derive_and_check(PipelineConfig& config, const NodePtr& resolved, Platform platform,
                      std::optional<int> devices_per_node, Diagnostics& diag);

}  // namespace roll::config
