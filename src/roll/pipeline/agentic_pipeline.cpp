#include "roll/pipeline/agentic_pipeline.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <thread>

#include "roll/agentic/group_queue.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/pipeline/batch_adjust.h"
#include "roll/pipeline/rlvr_metrics.h"
#include "roll/pipeline/rollout_batch.h"
#include "roll/rl/advantage.h"
#include "roll/rl/agentic_reward.h"
#include "roll/rl/data_metrics.h"
#include "roll/rl/kl.h"
#include "roll/rl/masks.h"
#include "roll/rl/reward.h"
#include "roll/runtime/rpc_client.h"
#include "roll/runtime/rpc_server.h"
#include "roll/runtime/worker_launch.h"
#include "roll/workers/group_queue_service.h"
#include "roll/workers/request_router.h"
#include "roll/workers/router_service.h"

namespace roll::pipeline {
namespace {

// A router or queue published by the driver on its own server thread.
struct Service {
  // On this node's address, so env workers on other nodes of a multi-node job reach it.
  std::unique_ptr<runtime::RpcServer> server =
      std::make_unique<runtime::RpcServer>("tcp://" + runtime::service_bind_host() + ":*");
  std::thread thread;
  void start() {
    thread = std::thread([this] { server->serve(); });
  }
  ~Service() {
    server->stop();
    if (thread.joinable()) thread.join();
  }
};

agentic::GroupQueueOptions queue_options(const config::EnvManagerConfig& fleet, const config::PipelineConfig& c,
                                         bool val) {
  agentic::GroupQueueOptions qo;
  qo.num_groups = fleet.num_env_groups;
  qo.group_size = fleet.group_size;
  qo.group_size_redundancy = fleet.group_size_redundancy;
  qo.async_generation_ratio = val ? 0 : static_cast<int64_t>(c.async_generation_ratio);
  if (val) {
    // Validation plays val_batch_size trajectories (-1: one episode per env), then every env exits.
    const int64_t per_group = std::max<int64_t>(1, fleet.num_env_groups * fleet.group_size);
    qo.episodes_per_step = c.val_batch_size > 0 ? std::max<int64_t>(1, c.val_batch_size / per_group) : 1;
    qo.max_episodes_per_group = qo.episodes_per_step;
  } else {
    qo.episodes_per_step = std::max<int64_t>(1, fleet.max_traj_per_env);
  }
  return qo;
}

// The trajectories of a batch of rollouts as one Batch.
Batch rollouts_batch(const std::vector<agentic::Rollout>& rollouts, rl::MetricMap& env_metrics) {
  std::vector<Batch> parts;
  for (const auto& r : rollouts) {
    if (!r.data) continue;
    merge_json_metrics(env_metrics, r.data->meta.value("metrics", nlohmann::json::object()));
    Batch b = *r.data;
    b.meta = nlohmann::json::object();
    parts.push_back(std::move(b));
  }
  if (parts.empty()) throw Error("agentic: the rollout batch holds no trajectory");
  return concat_domains(std::move(parts));
}

std::vector<std::string> string_column(const Batch& b, const std::string& key) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < b.size(); ++i) {
    const Cell& c = b.cell(key, i);
    out.push_back(c.is_string() ? c.get<std::string>() : c.dump());
  }
  return out;
}

void add_stats(Metrics& m, const std::string& prefix, const at::Tensor& x) {
  if (x.numel() == 0) return;
  at::Tensor f = x.to(at::kDouble);
  m[prefix + "/mean"] = f.mean().item<double>();
  m[prefix + "/max"] = f.max().item<double>();
  m[prefix + "/min"] = f.min().item<double>();
}

}  // namespace

struct AgenticPipeline::Impl {
  std::vector<std::shared_ptr<runtime::RpcClient>> infer_ranks;
  std::unique_ptr<workers::RequestRouter> train_router, val_router;
  Service train_router_service, val_router_service, train_queue_service;
  std::unique_ptr<agentic::GroupQueueManager> train_queue;
  std::optional<rl::KlController> kl;
  bool train_rollout_started = false;
};

AgenticPipeline::AgenticPipeline(config::LoadedConfig loaded, config::LoadRequest request, PipelineOptions options)
    : PipelineBase(std::move(loaded), std::move(request), std::move(options)), impl_(std::make_unique<Impl>()) {}

AgenticPipeline::~AgenticPipeline() {
  if (impl_->train_queue) impl_->train_queue->shutdown();
}

void AgenticPipeline::on_finished() {
  // The env loops run across steps: stop them (aborting what they generate) before the workers go.
  impl_->train_router->abort_all();
  if (auto* envs = find_cluster("train_env"); envs && impl_->train_rollout_started) {
    impl_->train_router->resume();  // aborted requests answer; stopping envs must not wait on a held one
    envs->call("stop_rollout", runtime::Dispatch::one_to_all).get_all();
    impl_->train_rollout_started = false;
  }
  impl_->train_queue->shutdown();
}

void AgenticPipeline::on_started() {
  const auto& c = config();
  auto& infer = cluster("actor_infer");
  for (int r = 0; r < infer.world_size(); ++r)
    impl_->infer_ranks.push_back(std::make_shared<runtime::RpcClient>(infer.endpoint(r), infer.describe(r)));
  impl_->train_router = std::make_unique<workers::RequestRouter>(impl_->infer_ranks, workers::RouterKind::env_affinity,
                                                                 c.max_running_requests);
  impl_->val_router = std::make_unique<workers::RequestRouter>(impl_->infer_ranks, workers::RouterKind::env_affinity,
                                                               c.max_running_requests);
  workers::bind_router(*impl_->train_router_service.server, *impl_->train_router);
  workers::bind_router(*impl_->val_router_service.server, *impl_->val_router);
  impl_->train_queue = std::make_unique<agentic::GroupQueueManager>(queue_options(c.train_env_manager, c, false));
  workers::bind_group_queue(*impl_->train_queue_service.server, *impl_->train_queue);
  impl_->train_router_service.start();
  impl_->val_router_service.start();
  impl_->train_queue_service.start();
  impl_->kl = rl::KlController::from_config(c.init_kl_coef, c.target_kl, c.kl_horizon);
}

bool AgenticPipeline::has_validation() const { return const_cast<AgenticPipeline*>(this)->find_cluster("val_env"); }

Metrics AgenticPipeline::validate(int64_t step) {
  const auto& c = config();
  auto& envs = cluster("val_env");
  const auto t0 = std::chrono::steady_clock::now();
  agentic::GroupQueueManager queue(queue_options(c.val_env_manager, c, true));
  Service queue_service;
  workers::bind_group_queue(*queue_service.server, queue);
  queue_service.start();
  queue.advance_step(step);
  envs.call("start_rollout", runtime::Dispatch::one_to_all,
            runtime::Payload(nlohmann::json{{"router_endpoint", impl_->val_router_service.server->endpoint()},
                                            {"queue_endpoint", queue_service.server->endpoint()},
                                            {"seed", c.seed},
                                            {"mode", "val"}}))
      .get_all();
  auto rollouts = queue.get_batch(-1, step, static_cast<double>(c.rpc_timeout));
  envs.call("stop_rollout", runtime::Dispatch::one_to_all).get_all();
  if (!rollouts) throw Error("validation: the val env workers did not finish within rpc_timeout");
  rl::MetricMap env;
  Batch b = rollouts_batch(*rollouts, env);
  Metrics m;
  const at::Tensor score = b.tensor("scores").sum(1);
  add_stats(m, "val/score", score);
  std::map<std::string, std::vector<double>> per_tag;
  const auto tags = string_column(b, "tags");
  for (int64_t i = 0; i < b.size(); ++i) per_tag[tags[i]].push_back(score[i].item<double>());
  for (const auto& [tag, v] : per_tag) add_stats(m, "val/" + tag + "/score", at::tensor(v, at::kDouble));
  for (auto& [k, v] : env.reduce()) m["val/" + k] = v;
  m["time/step_val"] = seconds_since(t0);
  log::info("validation step {}: val/score/mean {:.4f} over {} trajectories", step, m["val/score/mean"], b.size());
  return m;
}

Metrics AgenticPipeline::run_step(int64_t step) {
  const auto& c = config();
  Impl& im = *impl_;
  Metrics m;

  // 1. Rollout: the env loops run across steps; each step adds episodes and takes complete groups.
  auto t0 = std::chrono::steady_clock::now();
  im.train_queue->advance_step(step);
  if (!im.train_rollout_started) {
    cluster("train_env")
        .call("start_rollout", runtime::Dispatch::one_to_all,
              runtime::Payload(nlohmann::json{{"router_endpoint", im.train_router_service.server->endpoint()},
                                              {"queue_endpoint", im.train_queue_service.server->endpoint()},
                                              {"seed", c.seed},
                                              {"mode", "train"}}))
        .get_all();
    im.train_rollout_started = true;
  }
  im.train_router->resume();
  auto rollouts = im.train_queue->get_batch(c.rollout_batch_size, step, static_cast<double>(c.rpc_timeout));
  if (!rollouts) throw Error(fmt::format("step {}: no rollout batch within rpc_timeout ({} s)", step, c.rpc_timeout));
  // Synchronous training: nothing generates while the weights change (ROLL's suspend + abort).
  im.train_router->suspend();
  im.train_router->abort_all();
  rl::MetricMap env;
  Batch batch = rollouts_batch(*rollouts, env);
  for (auto& [k, v] : env.reduce()) m[k] = v;
  m["time/step_rollout"] = seconds_since(t0);
  // Whole micro-batches on every rank (spec 6.5).
  AdjustedBatch adjusted = adjust_batch(batch, batch_divisor(c, plan_), c.batch_adjust_mode,
                                        static_cast<uint64_t>(c.seed) * 7919u + static_cast<uint64_t>(step));
  batch = std::move(adjusted.batch);
  m["system/batch_add_count"] = static_cast<double>(adjusted.added);
  m["system/batch_remove_count"] = static_cast<double>(adjusted.removed);

  // 2. Log-probs and values.
  t0 = std::chrono::steady_clock::now();
  for (auto& [k, v] : compute_log_probs_and_values(batch)) m[k] = v;
  m["time/old_log_probs_values"] = seconds_since(t0);

  // 3. Masks, response-level rewards (spec 3.4), token rewards, advantages.
  t0 = std::chrono::steady_clock::now();
  const at::Tensor resp = batch.tensor("response_mask").slice(1, 1).to(at::kFloat);
  rl::SampleMaskResult mask = rl::agentic_response_level_mask(resp);
  rl::AgenticRewardParams rp;
  rp.adv_estimator = rl::parse_adv_estimator(c.adv_estimator);
  rp.reward_normalization.grouping = c.reward_normalization.grouping;
  rp.reward_normalization.method = c.reward_normalization.method;
  if (c.reward_normalization.norm_mean_type) rp.reward_normalization.norm_mean_type = rl::parse_norm_type(*c.reward_normalization.norm_mean_type);
  if (c.reward_normalization.norm_std_type) rp.reward_normalization.norm_std_type = rl::parse_norm_type(*c.reward_normalization.norm_std_type);
  rp.episode_reward_weight = c.episode_reward_weight;
  rp.step_reward_weight = c.step_reward_weight;
  rp.reward_clip = c.reward_clip;
  rl::AgenticRewardInputs ri;
  ri.scores = batch.tensor("scores");
  for (const char* key : {"traj_group_id", "tags", "traj_id"})
    if (batch.has_column(key)) ri.columns[key] = string_column(batch, key);
  rl::AgenticRewardResult rewards = rl::compute_response_level_rewards(ri, rp);
  rl::MetricMap shaped = mask.metrics;
  shaped.merge(rewards.metrics);
  shaped.merge(token_rewards_and_advantages(batch, rewards.response_level_rewards, resp, c, *im.kl));
  batch.set_tensor("final_response_mask", mask.final_response_mask);
  batch.set_tensor("response_level_rewards", rewards.response_level_rewards);
  for (auto& [k, v] : shaped.reduce()) m[k] = v;
  m["time/compute_advantage"] = seconds_since(t0);

  // 4. Train.
  t0 = std::chrono::steady_clock::now();
  for (auto& [k, v] : train(batch, step)) m[k] = v;
  m["time/step_train"] = seconds_since(t0);

  // 5. Metrics of spec 6.3 step 6.
  const at::Tensor score = batch.tensor("scores").sum(1);
  add_stats(m, "critic/score", score);
  add_stats(m, "critic/rewards", rewards.response_level_rewards);
  add_stats(m, "critic/advantages", (batch.tensor("advantages") * resp).sum(1) / resp.sum(1).clamp_min(1));
  add_stats(m, "tokens/response_length", batch.tensor("response_mask").sum(1));
  add_stats(m, "tokens/prompt_length", batch.tensor("prompt_mask").sum(1));
  add_stats(m, "tokens/non_prompt_length", batch.tensor("attention_mask").sum(1) - batch.tensor("prompt_mask").sum(1));
  m["system/samples"] = static_cast<double>((step + 1) * c.rollout_batch_size);
  m["system/batch_size"] = static_cast<double>(batch.size());
  const double tokens = batch.tensor("attention_mask").sum().item<double>();
  m["system/tps"] = tokens / std::max(1e-9, m["time/step_rollout"] + m["time/step_train"]);
  return m;
}

}  // namespace roll::pipeline
