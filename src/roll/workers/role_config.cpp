#include "roll/workers/role_config.h"

#include "roll/config/model_path.h"
#include "roll/config/opd.h"
#include "roll/core/error.h"
#include "roll/runtime/role.h"

namespace roll::workers {

const config::WorkerConfig& worker_config_of(const config::PipelineConfig& c, const std::string& cluster) {
  if (const config::WorkerConfig* teacher = config::opd_teacher_of(c, cluster)) return *teacher;
  if (cluster == "actor_train") return c.actor_train;
  if (cluster == "actor_infer") return c.actor_infer;
  if (cluster == "reference") return c.reference;
  if (cluster == "critic") return c.critic;
  if (cluster == "sft_train") return c.sft_train;
  if (cluster == "student") return c.student;
  if (cluster == "teacher") return c.teacher;
  if (cluster == "train_env") return c.train_env_manager.worker;
  if (cluster == "val_env") return c.val_env_manager.worker;
  if (cluster == "reward_model" && c.reward_model) return *c.reward_model;
  if (cluster == "reward" && c.reward) return c.reward->worker;
  if (cluster.rfind("reward-", 0) == 0) {
    const std::string domain = cluster.substr(7);
    for (const auto& [d, r] : c.rewards)
      if (d == domain) return r.worker;
  }
  throw Error("the config has no role for cluster '" + cluster + "'");
}

const config::RewardConfig& reward_config_of(const config::PipelineConfig& c, const std::string& cluster) {
  for (const auto& [domain, r] : c.rewards)
    if ("reward-" + domain == cluster) return r;
  throw Error("the config has no rewards entry for cluster '" + cluster + "'");
}

std::string model_dir_of(const runtime::WorkerContext& ctx) {
  if (ctx.options.contains("model_dir")) return ctx.options["model_dir"].get<std::string>();
  if (!ctx.config) throw Error("worker " + ctx.worker_name + ": no config and no model_dir option");
  const auto& w = worker_config_of(ctx.config->config, ctx.cluster);
  if (!w.model_args.model_name_or_path)
    throw ConfigError(ctx.cluster + ".model_args.model_name_or_path",
                      ctx.cluster + ".model_args.model_name_or_path is not set");
  return config::resolve_model_path(*w.model_args.model_name_or_path, ctx.cluster + ".model_args.model_name_or_path");
}

}  // namespace roll::workers
