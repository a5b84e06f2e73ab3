#pragma once
// Which part of the job's config a worker's cluster reads, and where its model lives.
#include <string>

#include <nlohmann/json.hpp>

#include "roll/config/schema.h"

namespace roll::runtime {
struct WorkerContext;
}

namespace roll::workers {

// The WorkerConfig of a cluster name (actor_train, actor_infer, reference, critic, reward-<d>, ...).
// Throws roll::Error naming the cluster when the config has no such role.
const config::WorkerConfig& worker_config_of(const config::PipelineConfig& config, const std::string& cluster);

// The rewards.<domain> block of a reward cluster (reward-<domain>); roll::Error naming the cluster
// when the config has none.
const config::RewardConfig& reward_config_of(const config::PipelineConfig& config, const std::string& cluster);

// The model directory of a worker: options["model_dir"] when the driver gave one, else the
// cluster's model_args.model_name_or_path resolved (config/model_path.h; never a download).
std::string model_dir_of(const runtime::WorkerContext& ctx);

}  // namespace roll::workers
