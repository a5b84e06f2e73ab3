#pragma once
// ROLL's PPOConfig: the model, the four RL worker groups and the RL algorithm's keys (docs/config.md,
// docs/rl.md).
#include <cstdint>
#include <optional>
#include <string>

#include "roll/config/node.h"
#include "roll/config/ordered.h"
#include "roll/config/rl_config.h"
#include "roll/config/worker_config.h"

namespace roll::config {

struct PPOConfig {
  std::optional<std::string> pretrain;
  std::optional<std::string> reward_pretrain;
  WorkerConfig actor_train, actor_infer, critic, reference;
  double async_generation_ratio = 0;
  int64_t ppo_epochs = 1;
  double max_grad_norm = 1.0;
  double lambd = 0.95;
  double gamma = 1.0;
  double pg_clip = 0.2;
  bool use_pg_clip_range = false;
  double pg_clip_low = 0.2;
  double pg_clip_high = 0.2;
  std::optional<double> value_clip;
  std::string kl_penalty = "kl";
  std::optional<double> target_kl;
  double init_kl_coef = 0.2;
  double kl_horizon = 10000;
  std::optional<double> reward_clip;
  bool whiten_rewards = false;
  bool whiten_advantages = false;
  std::optional<double> advantage_clip;
  std::string adv_estimator = "gae";
  std::optional<std::string> norm_mean_type;
  std::optional<std::string> norm_std_type;
  bool add_token_level_kl = false;
  int64_t critic_warmup = 0;
  bool use_kl_loss = false;
  double kl_loss_coef = 0.0;
  double entropy_loss_coef = 0.0;
  std::string loss_agg_mode = "seq-mean-token-mean";
  bool dual_clip_loss = false;
  bool enable_reference = false;              // derived (or forced on)
  bool enable_old_logprobs_recompute = false;  // derived (or forced on)
  bool force_disable_old_logprobs_recompute = false;
  TrainInferCorrection train_infer_correction;
  OverlongRewardConfig overlong_reward;
  bool is_pure_opd = false;  // set by the loader for configs with student_train/student_infer (config/opd.h)
  bool use_opd = false;
  // On-policy distillation's teachers in YAML order (config/opd.h): `teacher` as one worker
  // ("default") or as a mapping of named workers. Filled by the loader, not by `visit`.
  Ordered<WorkerConfig> opd_teachers;

  template <typename V>
  void visit(V& v) {
    v("pretrain", pretrain);
    v("reward_pretrain", reward_pretrain);
    v.nested("actor_train", actor_train);
    v.nested("actor_infer", actor_infer);
    v.nested("critic", critic);
    v.nested("reference", reference);
    v("async_generation_ratio", async_generation_ratio);
    v("ppo_epochs", ppo_epochs);
    v("max_grad_norm", max_grad_norm);
    v("lambd", lambd);
    v("gamma", gamma);
    v("pg_clip", pg_clip);
    v("use_pg_clip_range", use_pg_clip_range);
    v("pg_clip_low", pg_clip_low);
    v("pg_clip_high", pg_clip_high);
    v("value_clip", value_clip);
    v("kl_penalty", kl_penalty);
    v("target_kl", target_kl);
    v("init_kl_coef", init_kl_coef);
    v("kl_horizon", kl_horizon);
    v("reward_clip", reward_clip);
    v("whiten_rewards", whiten_rewards);
    v("whiten_advantages", whiten_advantages);
    v("advantage_clip", advantage_clip);
    v("adv_estimator", adv_estimator);
    v("norm_mean_type", norm_mean_type);
    v("norm_std_type", norm_std_type);
    v("add_token_level_kl", add_token_level_kl);
    v("critic_warmup", critic_warmup);
    v("use_kl_loss", use_kl_loss);
    v("kl_loss_coef", kl_loss_coef);
    v("entropy_loss_coef", entropy_loss_coef);
    v("loss_agg_mode", loss_agg_mode);
    v("dual_clip_loss", dual_clip_loss);
    v("enable_reference", enable_reference);
    v("enable_old_logprobs_recompute", enable_old_logprobs_recompute);
    v("force_disable_old_logprobs_recompute", force_disable_old_logprobs_recompute);
    v.nested("train_infer_correction", train_infer_correction);
    v.nested("overlong_reward", overlong_reward);
    v("is_pure_opd", is_pure_opd);
    v("use_opd", use_opd);
    for (const char* k : {"l2", "use_reward_scaling", "use_reward_norm", "add_len_reward", "student_train",
                          "student_infer", "pure_opd_pipeline_type"})
      v.inert(k);
  }
};

}  // namespace roll::config
