#include "roll/pipeline/pipeline_base.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <ATen/ATen.h>

#include "roll/config/node_json.h"
#include "roll/config/opd.h"
#include "roll/config/reader.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/core/progress.h"
#include "roll/monitor/dashboard_server.h"
#include "roll/monitor/run_board.h"
#include "roll/monitor/run_record.h"
#include "roll/pipeline/opd_scoring.h"
#include "roll/pipeline/resume_config.h"
#include "roll/pipeline/step_profile.h"
#include "roll/pipeline/train_infer_step.h"
#include "roll/rl/balance.h"
#include "roll/runtime/cluster_state.h"
#include "roll/track/tracker.h"
#include "roll/workers/metrics_json.h"
#include "roll/workers/rpc_methods.h"

namespace roll::pipeline {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string role_of_cluster(const std::string& cluster) {
  if (cluster.rfind("reward-", 0) == 0) return "reward";
  if (cluster == "train_env" || cluster == "val_env") return "env_manager";
  if (cluster == "reward_model" || cluster == "reward") return "actor_infer";
  return cluster;  // actor_train, actor_infer, reference, critic, sft_train
}

std::string PipelineBase::role_of(const std::string& cluster) const {
  if (config::opd_teacher_of(config(), cluster)) return "reference";
  return role_of_cluster(cluster);
}

PipelineBase::PipelineBase(config::LoadedConfig loaded, config::LoadRequest request, PipelineOptions options)
    : loaded_(std::move(loaded)), request_(std::move(request)), options_(std::move(options)) {
  plan_ = config::make_placement_plan(loaded_.config, loaded_.platform);
}

PipelineBase::~PipelineBase() {
  stop_runtime();
  dashboard_.reset();
  if (!run_record_.empty()) {
    std::error_code ec;
    std::filesystem::remove(run_record_, ec);
  }
  // Train rank 0 unlinks its shared weights file when it exits; a killed one leaves it behind.
  if (!shm_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(shm_dir_, ec);
  }
}

runtime::Cluster* PipelineBase::find_cluster(const std::string& name) {
  auto it = clusters_.find(name);
  return it == clusters_.end() ? nullptr : it->second.get();
}

runtime::Cluster& PipelineBase::cluster(const std::string& name) {
  if (auto* c = find_cluster(name)) return *c;
  throw Error("pipeline: no cluster '" + name + "' is running");
}

std::optional<std::string> PipelineBase::cluster_failure() const {
  for (const auto& [name, cl] : clusters_)
    if (auto why = cl->failure()) return why;
  return std::nullopt;
}

void PipelineBase::fail_if_a_worker_died() const {
  if (auto why = cluster_failure())
    throw Error(fmt::format("{} (after the run's last call to it; the run's work completed)", *why));
}

std::chrono::milliseconds PipelineBase::rpc_timeout() const {
  return std::chrono::seconds(std::max<int64_t>(1, config().rpc_timeout));
}

void PipelineBase::stop_runtime() {
  if (dashboard_) dashboard_->attach(nullptr);
  if (runtime_) {
    log::info("stopping the workers");
    runtime_->shutdown();
  }
}

void PipelineBase::start_dashboard() {
  const auto& c = config();
  board_ = std::make_shared<monitor::RunBoard>(options_.pipeline_name, c.exp_name.value_or(""), c.max_steps);
  monitor::RunRecord record;
  record.pid = static_cast<int>(getpid());
  record.pipeline = options_.pipeline_name;
  record.exp_name = c.exp_name.value_or("");
  record.output_dir = c.output_dir;
  record.started_unix = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (options_.dashboard_port > 0) {
    monitor::DashboardOptions d;
    // Where the driver's services bind: this node's address on the head of a multi-node job.
    if (const char* bind = std::getenv("ROLL_BIND_HOST")) d.host = bind;
    d.port = options_.dashboard_port;
    d.log_dir = worker_log_dir();
    dashboard_ = std::make_unique<monitor::DashboardServer>(d, board_);
    record.dashboard_url = dashboard_->url();
    log::info("dashboard at {} (read-only; keep it on a trusted network)", dashboard_->url());
  }
  try {
    run_record_ = monitor::write_run_record(runtime::cluster_dir(comm::process_env()), record);
  } catch (const std::exception& e) {
    log::warn("`roll status` will not find this run: {}", e.what());
  }
}

std::string PipelineBase::worker_log_dir() const {
  const auto& c = config();
  return fmt::format("{}/{}", c.logging_dir, c.exp_name.value_or("roll"));
}

void PipelineBase::start_clusters() {
  runtime::RuntimeOptions o;
  o.worker_command = {options_.worker_executable, "worker"};
  o.log_dir = worker_log_dir();
  o.watchdog = options_.watchdog;
  o.config_request = request_;
  o.platform = loaded_.platform;
  o.rpc_timeout = rpc_timeout();
  o.forward_output = options_.forward_worker_output;
  o.nodes = options_.nodes;
  runtime_ = std::make_unique<runtime::Runtime>(o);
  if (dashboard_) dashboard_->attach(runtime_.get());

  // docs/design.md section 4, quirk 1: the YAML's num_gpus_per_node stands; say so when the node has another count.
  if (auto n = config::detected_device_count(loaded_.platform); n && *n != plan_.devices_per_node)
    log::warn("num_gpus_per_node is {} but this node has {} {} device(s); placing by the config "
              "(--devices-per-node overrides it)",
              plan_.devices_per_node, *n, config::platform_rules(loaded_.platform).name);
  std::vector<runtime::ClusterSpec> specs;
  for (const auto& cp : plan_.clusters) {
    if (!cp.started) {
      log::info("cluster {} not started: {}", cp.name, cp.note);
      continue;
    }
    runtime::ClusterSpec spec;
    spec.placement = cp;
    spec.role = role_of(cp.name);
    spec.devices_per_node = plan_.devices_per_node;
    specs.push_back(std::move(spec));
  }
  if (config::reference_from_actor(config()))
    log::info("LoRA: no reference cluster; actor_train computes the reference log-probs with its adapters off");
  const auto t0 = std::chrono::steady_clock::now();
  log::info("starting {} clusters ({} worker processes)", specs.size(), [&] {
    size_t n = 0;
    for (const auto& s : specs) n += s.placement.workers.size();
    return n;
  }());
  for (auto& cl : runtime_->start(std::move(specs))) clusters_[cl->name()] = cl;
  log::info("all workers serving after {:.1f} s", seconds_since(t0));
}

void PipelineBase::setup_model_update() {
  auto* train = find_cluster("actor_train");
  auto* infer = find_cluster("actor_infer");
  if (!train || !infer) return;
  // An infer rank on train rank 0's node maps the weights file rank 0 rewrites in that node's
  // /dev/shm (shared_weights.h); an infer rank on another node takes the bucketed broadcast.
  // An infer rank that shares a device with a train rank of that node time-shares it with
  // training, so it is idle whenever rank 0 rewrites the file: it computes from the mapping
  // itself. The others copy the weights out.
  const int node0 = train->spec().placement.workers.at(0).node;
  std::vector<int> train_devices;
  for (const auto& w : train->spec().placement.workers)
    if (w.node == node0) train_devices.insert(train_devices.end(), w.devices.begin(), w.devices.end());
  for (int r = 0; r < infer->world_size(); ++r) {
    const auto& w = infer->spec().placement.workers.at(r);
    if (w.node != node0) {
      broadcast_ranks_.push_back(r);
      continue;
    }
    shm_ranks_.push_back(r);
    bool colocated = false;
    for (int d : w.devices) colocated = colocated || std::find(train_devices.begin(), train_devices.end(), d) != train_devices.end();
    // LoRA sends adapters only: the engine merges them into weights of its own.
    shm_shares_.push_back(colocated && !config().actor_train.model_args.lora_target);
  }
  if (!shm_ranks_.empty()) {
    std::string exp = config().exp_name.value_or("roll");
    std::replace(exp.begin(), exp.end(), '/', '_');
    shm_dir_ = fmt::format("/dev/shm/roll-{}-{}", getpid(), exp);
  }
  if (!broadcast_ranks_.empty()) {
    const int world = 1 + static_cast<int>(broadcast_ranks_.size());
    auto t = train->call(workers::rpc::kSetupModelUpdate, runtime::Dispatch::one_to_all,
                         runtime::Payload(nlohmann::json{{"group", "model_update"}, {"rank", 0}, {"world_size", world}}));
    std::vector<std::future<runtime::Payload>> parts;
    for (size_t i = 0; i < broadcast_ranks_.size(); ++i)
      parts.push_back(infer->call_rank(broadcast_ranks_[i], workers::rpc::kSetupModelUpdate,
                                       runtime::Payload(nlohmann::json{{"group", "model_update"},
                                                                       {"rank", 1 + static_cast<int>(i)},
                                                                       {"world_size", world}})));
    t.get_all();
    const std::string what = fmt::format("actor_infer.{}", workers::rpc::kSetupModelUpdate);
    for (auto& f : parts) runtime::wait_result(f, rpc_timeout(), what);
  }
  log::info("model update: {} infer rank(s) by broadcast, {} by shared memory ({} computing from it)",
            broadcast_ranks_.size(), shm_ranks_.size(), std::count(shm_shares_.begin(), shm_shares_.end(), true));
  model_update_ready_ = true;
}

Metrics PipelineBase::model_update(int64_t step) {
  auto* train = find_cluster("actor_train");
  auto* infer = find_cluster("actor_infer");
  Metrics m;
  if (!train || !infer) return m;
  const int64_t freq = std::max<int64_t>(1, config().actor_train.model_update_frequency);
  if (step % freq != 0) return m;
  if (!model_update_ready_) setup_model_update();
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t bucket = config().model_update_buffer_size_mb * (int64_t{1} << 20);
  // The weight version is the step whose rollout these weights serve: they carry `step` train steps.
  nlohmann::json args = {{"bucket_bytes", bucket}, {"version", step}};
  if (!broadcast_ranks_.empty()) args["group"] = "model_update";
  if (!shm_ranks_.empty()) args["shm_file"] = shm_dir_ + "/weights";
  auto send = train->call(workers::rpc::kBroadcastWeights, runtime::Dispatch::one_to_all, runtime::Payload(args));
  std::vector<std::future<runtime::Payload>> recv;
  for (int r : broadcast_ranks_)
    recv.push_back(infer->call_rank(
        r, workers::rpc::kReceiveWeights,
        runtime::Payload(nlohmann::json{{"group", "model_update"}, {"bucket_bytes", bucket}, {"version", step}})));
  auto sent = send.get_all();
  const std::string receive_what = fmt::format("actor_infer.{}", workers::rpc::kReceiveWeights);
  for (auto& f : recv) runtime::wait_result(f, rpc_timeout(), receive_what);
  if (!shm_ranks_.empty()) {
    const std::string file = sent.at(0).args.at("file").get<std::string>();
    std::vector<std::future<runtime::Payload>> loads;
    for (size_t i = 0; i < shm_ranks_.size(); ++i)
      loads.push_back(infer->call_rank(
          shm_ranks_[i], workers::rpc::kLoadSharedWeights,
          runtime::Payload(nlohmann::json{{"file", file}, {"version", step}, {"share", bool(shm_shares_[i])}})));
    const std::string load_what = fmt::format("actor_infer.{}", workers::rpc::kLoadSharedWeights);
    for (auto& f : loads) runtime::wait_result(f, rpc_timeout(), load_what);
  }
  m["time/actor_train/model_update/total"] = seconds_since(t0);
  return m;
}

Metrics PipelineBase::compute_log_probs_and_values(Batch& batch) {
  Metrics m;
  Batch forward = batch.select({"input_ids", "attention_mask", "position_ids", "response_mask"}, {});
  const int64_t B = batch.size(), T = batch.tensor("input_ids").size(1) - 1;
  std::optional<runtime::ClusterFuture> ref_f, old_f, values_f;
  if (auto* critic = find_cluster("critic"))
    values_f = critic->call(workers::rpc::kComputeValues, runtime::Dispatch::dp_mp_compute, runtime::Payload(forward));
  std::string ref_from = "reference";
  if (config::reference_from_actor(config())) {
    Batch base_only = forward;
    base_only.meta["disable_adapter"] = true;
    ref_from = "actor_train";
    ref_f = cluster("actor_train")
                .call(workers::rpc::kComputeLogProbs, runtime::Dispatch::dp_mp_compute, runtime::Payload(base_only));
  } else if (auto* ref = find_cluster("reference")) {
    ref_f = ref->call(workers::rpc::kComputeLogProbs, runtime::Dispatch::dp_mp_compute, runtime::Payload(forward));
  }
  std::optional<OpdScoring> opd;  // on-policy distillation: the teachers are the reference
  if (!config().opd_teachers.empty())
    opd.emplace(config(), batch, [this](const std::string& name) -> runtime::Cluster& { return cluster(name); });
  if (config().enable_old_logprobs_recompute)
    old_f = cluster("actor_train")
                .call(workers::rpc::kComputeLogProbs, runtime::Dispatch::dp_mp_compute, runtime::Payload(forward));
  // The workers' own metrics (dynamic_batching/<role>/<call>/*, merged over the ranks by dispatch).
  auto merge_metrics = [&](const runtime::Payload& r, const std::string& from) {
    const nlohmann::json metrics = r.batch->meta.value("metrics", nlohmann::json::object());
    for (auto& [k, v] : workers::metrics_from_json(metrics, from).reduce()) m[k] = v;
  };
  at::Tensor old_lp = at::zeros({B, T}, at::kFloat);
  if (old_f) {
    runtime::Payload r = old_f->get();
    merge_metrics(r, std::string("actor_train.") + workers::rpc::kComputeLogProbs);
    old_lp = r.batch->tensor("log_probs");
    if (r.batch->has_tensor("entropy")) {
      at::Tensor mask = batch.tensor("response_mask").slice(1, 1).to(at::kFloat);
      m["critic/entropy/mean"] =
          (r.batch->tensor("entropy") * mask).sum().item<double>() / std::max(1.0, mask.sum().item<double>());
    }
  }
  batch.set_tensor("old_log_probs", old_lp);
  if (opd) {
    for (auto& [k, v] : opd->finish(batch, merge_metrics)) m[k] = v;
  }
  // Without a reference, ROLL measures the KL against the old policy; without a recomputed old policy
  // either there is nothing to measure against (zeros would read as a KL of 10 after the k3 clamp).
  if (opd) {
    // OpdScoring::finish set the teachers' log-probs as ref_log_probs.
  } else if (ref_f) {
    runtime::Payload r = ref_f->get();
    merge_metrics(r, ref_from + "." + workers::rpc::kComputeLogProbs);
    batch.set_tensor("ref_log_probs", r.batch->tensor("log_probs"));
  } else if (old_f) {
    batch.set_tensor("ref_log_probs", old_lp);
  } else if (batch.has_tensor("ref_log_probs")) {
    batch.erase_tensor("ref_log_probs");
  }
  if (values_f) {
    runtime::Payload r = values_f->get();
    merge_metrics(r, std::string("critic.") + workers::rpc::kComputeValues);
    batch.set_tensor("values", r.batch->tensor("values"));
  }
  return m;
}

namespace {

// ROLL's batch_balance before the actor's train step (docs/rl.md): the samples are reordered so that
// each data-parallel rank's contiguous block carries about the same workload (24576·len + len²),
// which keeps the ranks from waiting on the one with the longest sequences. Logs
// global_seqlen/actor_train/*. A batch that does not split evenly over the ranks keeps its order,
// and so does one for a single rank (nothing to balance; the copy would buy nothing).
Batch balanced_for_train(const Batch& batch, int64_t dp_size, Metrics& m) {
  if (dp_size < 1 || batch.size() % dp_size != 0) return batch;
  const at::Tensor lens_t = batch.tensor("attention_mask").sum(1).to(at::kLong).contiguous();
  const std::vector<int64_t> lens(lens_t.data_ptr<int64_t>(), lens_t.data_ptr<int64_t>() + lens_t.numel());
  rl::BalanceResult r = rl::batch_balance(lens, dp_size, "global_seqlen/actor_train");
  for (auto& [k, v] : r.metrics.reduce()) m[k] = v;
  return dp_size == 1 ? batch : batch.take(r.order);
}

}  // namespace

Metrics PipelineBase::train(Batch& batch, int64_t step) {
  Metrics m = apply_train_infer_correction(config(), batch);
  batch.meta["global_step"] = step;
  std::optional<runtime::ClusterFuture> critic_f;
  if (auto* critic = find_cluster("critic"))
    critic_f = critic->call(workers::rpc::kTrainStep, runtime::Dispatch::dp_mp_compute, runtime::Payload(batch));
  auto merge = [&](const runtime::Payload& r, const char* from) {
    const nlohmann::json metrics = r.batch->meta.value("metrics", nlohmann::json::object());
    for (auto& [k, v] : workers::metrics_from_json(metrics, fmt::format("{}.{}", from, workers::rpc::kTrainStep)).reduce())
      m[k] = v;
  };
  if (config().critic_warmup <= step) {
    runtime::Cluster& actor = cluster("actor_train");
    Batch balanced = balanced_for_train(batch, actor.world_size(), m);
    merge(actor.call(workers::rpc::kTrainStep, runtime::Dispatch::dp_mp_compute, runtime::Payload(std::move(balanced))).get(),
          "actor_train");
  }
  if (critic_f) merge(critic_f->get(), "critic");
  return m;
}

nlohmann::json PipelineBase::written_config() const {
  if (!loaded_.composed) return nullptr;
  return nlohmann::json::parse(config::to_json(loaded_.composed).dump());
}

Metrics PipelineBase::checkpoint(int64_t step) {
  const auto& c = config();
  Metrics m;
  const bool due = step > 0 && ((c.save_steps > 0 && step % c.save_steps == 0) || step == c.max_steps - 1);
  if (!due) return m;
  const auto t0 = std::chrono::steady_clock::now();
  const nlohmann::json args = {{"output_dir", c.output_dir}, {"step", step}};
  std::vector<runtime::ClusterFuture> saves;
  std::vector<std::string> saved;
  for (const std::string& name : checkpoint_clusters())
    if (auto* cl = find_cluster(name)) {
      saves.push_back(cl->call(workers::rpc::kDoCheckpoint, runtime::Dispatch::one_to_all, runtime::Payload(args)));
      saved.push_back(name);
    }
  // Lines at the start, every 10 s and at the end: a checkpoint is a few slow parts.
  auto progress = make_log_progress();
  progress->start(fmt::format("checkpoint-{}", step), static_cast<int64_t>(saves.size()), "cluster");
  for (size_t i = 0; i < saves.size(); ++i) {
    saves[i].get_all();
    progress->set_postfix(saved[i] + " saved");
    progress->advance();
  }
  progress->finish();
  PipelineState st;
  st.step = step;
  st.log_history = nlohmann::json(history_);
  st.kv = state_kv();
  st.exp_name = c.exp_name.value_or("");
  st.config = written_config();
  // Written last: its presence marks the checkpoint complete.
  save_pipeline_state(pipeline_checkpoint_dir(c.output_dir, step), st);
  prune_checkpoints(c.output_dir, c.max_ckpt_to_keep);
  board_->checkpoint_written(step, pipeline_checkpoint_dir(c.output_dir, step));
  for (const std::string& name : saved) m["time/" + name + "/do_checkpoint/total"] = seconds_since(t0);
  log::info("checkpoint-{} saved under {}", step, c.output_dir);
  return m;
}

void PipelineBase::resume(const std::string& dir, const PipelineState& st) {
  const std::string name = std::filesystem::path(dir).filename().string();
  // <root>/pipeline/checkpoint-N: the clusters' checkpoints of that step sit under the same root,
  // which need not be this run's output_dir.
  const std::string root = std::filesystem::path(dir).lexically_normal().parent_path().parent_path().string();
  std::vector<runtime::ClusterFuture> loads;
  for (const std::string& cl_name : checkpoint_clusters())
    if (auto* cl = find_cluster(cl_name))
      loads.push_back(cl->call(workers::rpc::kLoadCheckpoint, runtime::Dispatch::one_to_all,
                               runtime::Payload(nlohmann::json{{"output_dir", root}, {"step", st.step}})));
  for (auto& f : loads) f.get_all();
  restore_kv(st.kv);
  for (const auto& h : st.log_history) {
    history_.push_back(h);
    if (tracker_) tracker_->log(h.value("system/step", int64_t{0}), h);
  }
  start_step_ = st.step + 1;
  log::info("resumed from {} ({}): continuing at step {}", dir, name, start_step_);
}

std::map<std::string, double> eval_metric_names(const std::map<std::string, double>& val) {
  std::map<std::string, double> out;
  // The middle of `k` between `prefix` and `suffix` when it is one path segment (a tag), else "".
  auto tag_of = [](const std::string& k, std::string_view prefix, std::string_view suffix) -> std::string {
    if (k.size() <= prefix.size() + suffix.size() || !k.starts_with(prefix) || !k.ends_with(suffix)) return "";
    std::string tag = k.substr(prefix.size(), k.size() - prefix.size() - suffix.size());
    return tag.find('/') == std::string::npos ? tag : "";
  };
  for (const auto& [k, v] : val) {
    if (auto t = tag_of(k, "val/env/", "/success"); !t.empty()) out["eval/" + t + "/success"] = v;
    else if (auto t2 = tag_of(k, "val_correct/", "/mean"); !t2.empty()) out["eval/" + t2 + "/accuracy"] = v;
    else if (auto t3 = tag_of(k, "val/", "/score/mean"); !t3.empty()) out["eval/" + t3 + "/score"] = v;
  }
  return out;
}

int PipelineBase::run_eval_only() {
  const auto& c = config();
  if (!has_validation())
    throw ConfigError(c.kind == config::PipelineKind::agentic ? "val_env_manager" : "validation",
                      "--eval-only needs validation in the config (val_env_manager for agentic, validation for rlvr)");
  log::info("evaluation only: validating {} once", c.pretrain.value_or("the actor model"));
  const auto t0 = std::chrono::steady_clock::now();
  Metrics m = validate(0);
  for (auto& [k, v] : eval_metric_names(m)) m[k] = v;
  m["time/val_step"] = seconds_since(t0);
  m["system/step"] = 0;
  nlohmann::json record(m);
  history_.push_back(record);
  tracker_->log(0, record);
  log::info("eval metrics: {}", nlohmann::json(eval_metric_names(m)).dump());
  fail_if_a_worker_died();
  on_finished();
  tracker_->finish();
  stop_runtime();
  log::info("evaluation complete!");
  return 0;
}

std::string PipelineBase::progress_postfix(const Metrics& m) const {
  std::string text;
  for (const char* key : {"critic/score/mean", "val/score/mean", "system/tps"})
    if (auto it = m.find(key); it != m.end()) text += fmt::format("{}{} {:.4g}", text.empty() ? "" : ", ", key, it->second);
  return text;
}

int PipelineBase::run() {
  start_dashboard();
  try {
    const int rc = run_steps();
    board_->set_finished();
    return rc;
  } catch (const std::exception& e) {
    board_->set_failed(e.what());
    throw;
  }
}

int PipelineBase::run_steps() {
  const auto& c = config();
  std::optional<std::string> resume_dir;
  PipelineState resume_state;
  if (!options_.eval_only) {
    // Checked before any worker starts: a checkpoint of another experiment is refused at once.
    std::string resume_value;
    if (c.resume_from_checkpoint && c.resume_from_checkpoint->is_scalar())
      resume_value = c.resume_from_checkpoint->text();
    resume_dir = find_resume_checkpoint(resume_value, c.output_dir);
    if (resume_dir) {
      resume_state = load_pipeline_state(*resume_dir);
      check_resume_exp_name(*resume_dir, resume_state, c.exp_name.value_or(""));
      for (const auto& change : check_resume_config(*resume_dir, resume_state.config, written_config()))
        log::info("resume: {} changed from {} to {}", change.key, change.before, change.after);
    }
  }
  tracker_ = track::make_tracker(c, config::write_pipeline_config(c));
  start_clusters();
  on_started();
  if (options_.eval_only) return run_eval_only();
  if (resume_dir) resume(*resume_dir, resume_state);
  if (start_step_ > 0 && start_step_ >= c.max_steps)
    log::info("resumed at step {} and max_steps is {}: nothing left to run (raise max_steps to train on)",
              start_step_, c.max_steps);

  double last_step_s = 0;
  std::vector<runtime::Cluster*> running;
  for (auto& [name, cl] : clusters_) running.push_back(cl.get());
  ClusterBusy busy(std::move(running));
  auto progress = make_step_progress();
  progress->start(start_step_ > 0 ? fmt::format("pipeline (resumed at step {})", start_step_) : "pipeline",
                  c.max_steps - start_step_, "step");
  board_->set_running(start_step_);
  for (int64_t step = start_step_; step < c.max_steps; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    board_->step_started(step);
    busy.start();
    log::info("pipeline step {} start...", step);
    Metrics m = before_model_update(step);
    for (auto& [k, v] : model_update(step)) m[k] = v;
    m["time/step_model_update"] = m.count("time/actor_train/model_update/total") ? m["time/actor_train/model_update/total"] : 0.0;
    if (has_validation() && c.eval_steps > 0 && step % c.eval_steps == 0) {
      const auto tv = std::chrono::steady_clock::now();
      for (auto& [k, v] : validate(step)) m[k] = v;
      m["time/val_step"] = seconds_since(tv);
    }
    for (auto& [k, v] : run_step(step)) m[k] = v;
    m["time/step_total"] = last_step_s;  // as ROLL: the previous step's wall time
    m["system/step"] = static_cast<double>(step);
    history_.push_back(nlohmann::json(m));  // what a checkpoint of this step saves as its log history
    for (auto& [k, v] : checkpoint(step)) m[k] = v;
    // The profile covers the step up to here; logging the record is the one part it leaves out.
    const double wall_s = seconds_since(t0);
    const auto phase_seconds = add_step_times(m, wall_s);
    busy.finish(m, wall_s);
    for (const auto& [k, v] : m) history_.back()[k] = v;
    nlohmann::json record(m);
    tracker_->log(step, record);
    board_->step_finished(step, m, phase_seconds, wall_s);
    if (c.logging_steps > 0 && step % c.logging_steps == 0) log::info("metrics step {}: {}", step, record.dump());
    last_step_s = seconds_since(t0);
    log::info("pipeline step {} finished ({})", step, format_step_profile(m));
    progress->set_postfix(progress_postfix(m));
    progress->advance();
  }
  progress->finish();
  fail_if_a_worker_died();
  on_finished();
  tracker_->finish();
  stop_runtime();
  log::info("pipeline complete!");
  return 0;
}

}  // namespace roll::pipeline
