#pragma once
// Every typed config area at once (docs/config.md). A layer that reads one area includes that
// area's header instead: worker_config.h, reward_config.h, env_manager_config.h, rl_config.h,
// base_config.h, ... ; pipeline_config.h is the whole file.
#include "roll/config/pipeline_config.h"  // IWYU pragma: export
