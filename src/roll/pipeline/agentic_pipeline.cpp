#include "roll/pipeline/agentic_pipeline.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#include "roll/agentic/env_activity_monitor.h"
#include "roll/agentic/group_queue.h"
#include "roll/config/schema.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/monitor/run_board.h"
#include "roll/pipeline/agentic_rewards.h"
#include "roll/pipeline/rollout/batch_adjust.h"
#include "roll/pipeline/step_advantages.h"
#include "roll/pipeline/rollout/rollout_batch.h"
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
#include "roll/workers/metrics_json.h"
#include "roll/workers/request_router.h"
#include "roll/workers/router_service.h"
#include "roll/workers/rpc_methods.h"

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
    env_metrics.merge(workers::metrics_from_json(r.data->meta.value("metrics", nlohmann::json::object()),
                                                 fmt::format("the rollout of env {}", r.env_id)));
    Batch b = *r.data;
    b.meta = nlohmann::json::object();
    parts.push_back(std::move(b));
  }
  if (parts.empty()) throw Error("agentic: the rollout batch holds no trajectory");
  return concat_domains(std::move(parts));
}

void add_stats(Metrics& m, const std::string& prefix, const at::Tensor& x) {
  if (x.numel() == 0) return;
  at::Tensor f = x.to(at::kDouble);
  m[prefix + "/mean"] = f.mean().item<double>();
  m[prefix + "/max"] = f.max().item<double>();
  m[prefix + "/min"] = f.min().item<double>();
}

// render_save_dir/<exp_name>/<start time>, as ROLL's AgenticConfig appends them.
std::string render_root(const config::PipelineConfig& c) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
  return fmt::format("{}/{}/{}", *c.render_save_dir, c.exp_name.value_or("roll"), stamp);
}

// Each val episode's text (meta.render, EnvManager::attach_render) as
// <root>/<step>/<env_id>_<tag>_<episode_id>_<score:.1f>.txt: ROLL's gif name plus the episode id,
// since an env may play several val episodes of one step.
void dump_renders(const std::string& root, int64_t step, const std::vector<agentic::Rollout>& rollouts) {
  const std::filesystem::path dir = std::filesystem::path(root) / std::to_string(step);
  std::filesystem::create_directories(dir);
  for (const auto& r : rollouts) {
    if (!r.data || !r.data->meta.contains("render")) continue;
    const std::string tag = r.data->cell("tags", 0).get<std::string>();
    const double score = r.data->cell("episode_scores", 0).get<double>();
    const std::filesystem::path file = dir / fmt::format("{}_{}_{}_{:.1f}.txt", r.env_id, tag, r.episode_id, score);
    std::ofstream out(file);
    out << r.data->meta["render"].get<std::string>();
    if (!out) throw Error("render_save_dir: cannot write " + file.string());
  }
}

}  // namespace

struct AgenticPipeline::Impl {
  std::vector<std::shared_ptr<runtime::RpcClient>> infer_ranks;
  std::unique_ptr<workers::RequestRouter> train_router, val_router;
  Service train_router_service, val_router_service, train_queue_service;
  std::unique_ptr<agentic::GroupQueueManager> train_queue;
  std::unique_ptr<agentic::EnvActivityMonitor> env_monitor;  // over train_queue; stops before it goes
  std::optional<rl::KlController> kl;
  bool train_rollout_started = false;
  std::string render_dir;  // empty: no render_save_dir
};

AgenticPipeline::AgenticPipeline(config::LoadedConfig loaded, config::LoadRequest request, PipelineOptions options)
    : PipelineBase(std::move(loaded), std::move(request), std::move(options)), impl_(std::make_unique<Impl>()) {}

AgenticPipeline::~AgenticPipeline() {
  impl_->env_monitor.reset();
  if (impl_->train_queue) impl_->train_queue->shutdown();
}

void AgenticPipeline::on_finished() {
  // The env loops run across steps: stop them (aborting what they generate) before the workers go.
  impl_->train_router->abort_all();
  if (auto* envs = find_cluster("train_env"); envs && impl_->train_rollout_started) {
    impl_->train_router->resume();  // aborted requests answer; stopping envs must not wait on a held one
    envs->call(workers::rpc::kStopRollout, runtime::Dispatch::one_to_all).get_all();
    impl_->train_rollout_started = false;
  }
  impl_->train_queue->shutdown();
}

Metrics AgenticPipeline::before_model_update(int64_t) {
  Metrics m;
  if (config().async_generation_ratio <= 0 || !impl_->train_rollout_started) return m;
  // Asynchronous: the env loops generated through training; new turns wait from here until the
  // next get_batch resumes the router, and the turns in flight are cut off. Their env managers send
  // the rest of each as a continuation (partial rollout), which the router holds until then.
  const auto t0 = std::chrono::steady_clock::now();
  impl_->train_router->suspend();
  impl_->train_router->abort_all();
  m["time/step_stop_server"] = seconds_since(t0);
  return m;
}

void AgenticPipeline::on_started() {
  const auto& c = config();
  auto& infer = cluster("actor_infer");
  for (int r = 0; r < infer.world_size(); ++r)
    impl_->infer_ranks.push_back(infer.connect(r));
  impl_->train_router = std::make_unique<workers::RequestRouter>(impl_->infer_ranks, workers::RouterKind::env_affinity,
                                                                 c.max_running_requests);
  impl_->val_router = std::make_unique<workers::RequestRouter>(impl_->infer_ranks, workers::RouterKind::env_affinity,
                                                               c.max_running_requests);
  workers::bind_router(*impl_->train_router_service.server, *impl_->train_router);
  workers::bind_router(*impl_->val_router_service.server, *impl_->val_router);
  impl_->train_queue = std::make_unique<agentic::GroupQueueManager>(queue_options(c.train_env_manager, c, false));
  workers::bind_group_queue(*impl_->train_queue_service.server, *impl_->train_queue);
  if (c.env_monitor.enable)
    impl_->env_monitor = std::make_unique<agentic::EnvActivityMonitor>(
        *impl_->train_queue,
        agentic::EnvMonitorOptions{static_cast<double>(c.env_monitor.monitor_interval),
                                   static_cast<double>(c.env_monitor.hung_timeout)},
        [board = board_ptr()](const std::vector<agentic::GroupQueueManager::HungEnv>& hung) {
          nlohmann::json list = nlohmann::json::array();
          for (const auto& h : hung)
            list.push_back({{"group_id", h.group_id}, {"env_id", h.env_id}, {"episode_id", h.episode_id},
                            {"seconds", h.seconds}});
          board->set_hung_envs(std::move(list));
        });
  impl_->train_router_service.start();
  impl_->val_router_service.start();
  impl_->train_queue_service.start();
  impl_->kl = rl::KlController::from_config(c.init_kl_coef, c.target_kl, c.kl_horizon);
  if (c.render_save_dir) impl_->render_dir = render_root(c);
}

// What decides the later steps besides the trained weights (exact resume, docs/agentic.md): the
// train queue's episode ids (they seed the maps and, with the hand-out slot, the sampling) and the
// adaptive KL coefficient. Everything else is a function of the step (batch adjust) or of the
// episode (env seeds, request seeds).
nlohmann::json AgenticPipeline::state_kv() const {
  return {{"agentic_rollout_state", {{"train_queue", impl_->train_queue->state()}, {"kl_coef", impl_->kl->value()}}}};
}

void AgenticPipeline::restore_kv(const nlohmann::json& kv) {
  const auto& c = config();
  if (!kv.contains("agentic_rollout_state")) {
    log::warn("resume: the checkpoint has no agentic_rollout_state (written before exact resume): the train "
              "queue starts its episode ids at 0, so the resumed steps play other episodes than the first run");
    return;
  }
  const auto& st = kv["agentic_rollout_state"];
  impl_->train_queue->restore(st.at("train_queue"));
  if (impl_->kl->adaptive())
    impl_->kl = rl::KlController::adaptive(st.at("kl_coef").get<double>(), *c.target_kl, c.kl_horizon);
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
  envs.call(workers::rpc::kStartRollout, runtime::Dispatch::one_to_all,
            runtime::Payload(nlohmann::json{{"router_endpoint", impl_->val_router_service.server->endpoint()},
                                            {"queue_endpoint", queue_service.server->endpoint()},
                                            {"seed", c.seed},
                                            {"mode", "val"}}))
      .get_all();
  auto rollouts = queue.get_batch(-1, step, static_cast<double>(c.rpc_timeout), [this] { return cluster_failure(); });
  envs.call(workers::rpc::kStopRollout, runtime::Dispatch::one_to_all).get_all();
  if (!rollouts) throw Error("validation: the val env workers did not finish within rpc_timeout");
  if (!impl_->render_dir.empty()) dump_renders(impl_->render_dir, step, *rollouts);
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
        .call(workers::rpc::kStartRollout, runtime::Dispatch::one_to_all,
              runtime::Payload(nlohmann::json{{"router_endpoint", im.train_router_service.server->endpoint()},
                                              {"queue_endpoint", im.train_queue_service.server->endpoint()},
                                              {"seed", c.seed},
                                              {"mode", "train"}}))
        .get_all();
    im.train_rollout_started = true;
  }
  im.train_router->resume();
  auto rollouts = im.train_queue->get_batch(c.rollout_batch_size, step, static_cast<double>(c.rpc_timeout),
                                            [this] { return cluster_failure(); });
  if (!rollouts) throw Error(fmt::format("step {}: no rollout batch within rpc_timeout ({} s)", step, c.rpc_timeout));
  if (c.async_generation_ratio <= 0) {
    // Synchronous training: nothing generates while the weights change (ROLL's suspend + abort).
    im.train_router->suspend();
    im.train_router->abort_all();
  }
  double lag = 0;
  for (const auto& r : *rollouts) lag += static_cast<double>(step - r.start_step);
  m["scheduler/off_policy_ratio"] = rollouts->empty() ? 0.0 : lag / static_cast<double>(rollouts->size());
  rl::MetricMap env;
  Batch batch = rollouts_batch(*rollouts, env);
  for (auto& [k, v] : env.reduce()) m[k] = v;
  m["time/step_rollout"] = seconds_since(t0);
  add_step_returns(batch, c);  // gigpo / step_reinforce: before batch adjust copies or drops rows
  // Whole micro-batches on every rank (docs/agentic.md).
  AdjustedBatch adjusted = adjust_batch(batch, batch_divisor(c, plan_), c.batch_adjust_mode,
                                        static_cast<uint64_t>(c.seed) * 7919u + static_cast<uint64_t>(step));
  batch = std::move(adjusted.batch);
  m["system/batch_add_count"] = static_cast<double>(adjusted.added);
  m["system/batch_remove_count"] = static_cast<double>(adjusted.removed);

  // 2. Log-probs and values.
  t0 = std::chrono::steady_clock::now();
  for (auto& [k, v] : compute_log_probs_and_values(batch)) m[k] = v;
  m["time/old_log_probs_values"] = seconds_since(t0);

  // 3. Masks, response-level rewards (docs/rl.md), token rewards, advantages.
  t0 = std::chrono::steady_clock::now();
  const at::Tensor resp = batch.tensor("response_mask").slice(1, 1).to(at::kFloat);
  rl::SampleMaskResult mask = rl::agentic_response_level_mask(resp);
  rl::AgenticRewardResult rewards = agentic_response_rewards(batch, c);
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

  // 5. Metrics of docs/agentic.md step 6.
  const at::Tensor score = batch.tensor("scores").sum(1);
  add_stats(m, "critic/score", score);
  add_stats(m, "critic/rewards", rewards.response_level_rewards);
  if (rewards.episode_rewards_norm.defined()) add_stats(m, "critic/episode_rewards_norm", rewards.episode_rewards_norm);
  if (rewards.step_rewards_norm.defined()) add_stats(m, "critic/step_rewards_norm", rewards.step_rewards_norm);
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
