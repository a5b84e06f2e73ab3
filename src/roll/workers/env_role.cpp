// The train_env / val_env role (ROLL's EnvironmentWorker, docs/agentic.md): a CPU worker hosting its share
// of the fleet's envs (agentic/env_layout.h), one env manager per env, each on its own thread. The
// driver hosts the router and the GroupQueueManager as services and passes their endpoints to
// start_rollout (methods and payloads: rpc_methods.h). A group's seed is start_rollout's seed plus
// the group's config-time seed; stop_rollout aborts each manager's request in flight and ends its
// wait for an episode before joining the threads.
// An env thread that fails ends the worker process, so the driver reports it (docs/design.md section 3:
// failure is seen from process exit) with the error in the worker's last log lines.
#include <atomic>
#include <condition_variable>
#include <map>
#include <thread>

#include "roll/agentic/env_layout.h"
#include "roll/agentic/step_env_manager.h"
#include "roll/agentic/traj_env_manager.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/core/log_sinks.h"
#include "roll/config/sampling_params.h"
#include "roll/core/generation.h"
#include "roll/model/chat_template.h"
#include "roll/model/tokenizer.h"
#include "roll/runtime/role.h"
#include "roll/runtime/rpc_server.h"
#include "roll/workers/register_roles.h"
#include "roll/workers/remote_episode_source.h"
#include "roll/workers/remote_llm_client.h"
#include "roll/workers/role_config.h"
#include "roll/workers/rpc_methods.h"

namespace roll::workers {
namespace {

using namespace std::chrono_literals;

// How long stop_rollout waits for aborted requests to come back before it stops waiting for the
// router and the queue altogether.
constexpr auto kStopGrace = 30s;

const config::EnvManagerConfig& fleet_of(const runtime::WorkerContext& ctx) {
  if (!ctx.config) throw Error("worker " + ctx.worker_name + ": an env worker needs the job's config");
  if (ctx.cluster == "train_env") return ctx.config->config.train_env_manager;
  if (ctx.cluster == "val_env") return ctx.config->config.val_env_manager;
  throw Error("worker " + ctx.worker_name + ": the env_manager role serves clusters train_env and val_env, not '" +
              ctx.cluster + "'");
}

class EnvRole : public runtime::Role {
 public:
  explicit EnvRole(runtime::WorkerContext& ctx)
      : ctx_(ctx), fleet_(fleet_of(ctx)), val_(ctx.cluster == "val_env") {
    const config::PipelineConfig& c = ctx.config->config;
    if (fleet_.llm_proxy.proxy_type != "policy")
      throw NotSupportedError(fmt::format("{}.llm_proxy.proxy_type '{}' (only 'policy': the actor_infer router)",
                                          val_ ? "val_env_manager" : "train_env_manager",
                                          fleet_.llm_proxy.proxy_type));
    if (!c.sequence_length) throw ConfigError("sequence_length", "the agentic pipeline needs sequence_length");
    slots_ = agentic::env_slots_of_rank(fleet_, c.seed, val_, ctx.rank);
    for (const auto& s : slots_)
      if (!specs_.count(s.tag)) {
        specs_[s.tag] = agentic::env_spec_of(c, s.tag);
        agentic::is_step_env_manager(specs_[s.tag]);  // an unsupported class fails here, not at start
      }
    const std::string dir = model_dir_of(ctx);
    tokenizer_ = std::make_unique<model::Tokenizer>(model::Tokenizer::from_dir(dir));
    // ROLL's env managers apply the tokenizer's own chat template.
    chat_template_ = std::make_unique<model::ChatTemplate>(model::ChatTemplate::from_model_dir("native", dir));
    // derive copies actor_infer's generating_args to both fleets when it has them.
    config::GeneratingArguments args;
    if (fleet_.worker.generating_args) args = *fleet_.worker.generating_args;
    else if (c.actor_infer.generating_args) args = *c.actor_infer.generating_args;
    std::vector<int32_t> stops;
    for (auto id : {tokenizer_->eos_id(), tokenizer_->pad_id()})
      if (id) stops.push_back(*id);
    generation_ = config::sampling_params_from(args, stops);
    log::info("{}: {} env(s) (ids {}..{}), model {}", ctx.worker_name, slots_.size(),
              slots_.empty() ? -1 : slots_.front().env_id, slots_.empty() ? -1 : slots_.back().env_id, dir);
  }

  ~EnvRole() override {
    // The driver is shutting the worker down: nobody may answer any more, so do not wait.
    stop(std::chrono::seconds(0));
  }

  void bind(runtime::RpcServer& s) override {
    using runtime::Payload;
    s.on_call(rpc::kStartRollout, [this](Payload p) { return Payload(start(p.args)); });
    s.on_call(rpc::kStopRollout, [this](Payload) { return Payload(stop(kStopGrace)); });
    s.on(
        rpc::kStats, [this](Payload, runtime::Responder& reply) { reply.ok(Payload(stats())); }, runtime::RunMode::inline_);
  }

 private:
  nlohmann::json start(const nlohmann::json& a) {
    for (const char* key : {"router_endpoint", "queue_endpoint"})
      if (!a.contains(key) || !a[key].is_string())
        throw Error(std::string("start_rollout: '") + key + "' (an endpoint) is required");
    if (!a.contains("seed") || !a["seed"].is_number_integer())
      throw Error("start_rollout: 'seed' (an integer) is required");
    const std::string mode = a.value("mode", std::string(val_ ? "val" : "train"));
    if (mode != "train" && mode != "val") throw Error("start_rollout: mode must be train or val, got '" + mode + "'");
    const auto seed = a["seed"].get<int64_t>();
    std::lock_guard<std::mutex> g(mu_);
    if (!threads_.empty()) throw Error("start_rollout: " + ctx_.worker_name + " is already running; stop_rollout first");
    llm_ = std::make_unique<RemoteLlmClient>(a["router_endpoint"].get<std::string>());
    episodes_ = std::make_unique<RemoteEpisodeSource>(a["queue_endpoint"].get<std::string>());
    const config::PipelineConfig& c = ctx_.config->config;
    nlohmann::json env_ids = nlohmann::json::array();
    for (const auto& slot : slots_) {
      agentic::EnvManagerOptions o;
      o.spec = specs_.at(slot.tag);
      o.group_id = slot.group_id;
      o.env_id = slot.env_id;
      o.group_seed = static_cast<uint64_t>(seed) + slot.group_seed;
      o.sequence_length = *c.sequence_length;
      o.generation = generation_;
      o.skip_mock_system_prompt = c.skip_mock_system_prompt;
      o.mode = mode;
      o.render = mode == "val" && c.render_save_dir.has_value();
      o.partial_rollout = mode == "train" && c.async_generation_ratio > 0;
      std::unique_ptr<agentic::EnvManager> m;
      if (agentic::is_step_env_manager(o.spec))
        m = std::make_unique<agentic::StepEnvManager>(std::move(o), *tokenizer_, *chat_template_, *llm_, *episodes_);
      else
        m = std::make_unique<agentic::TrajEnvManager>(std::move(o), *tokenizer_, *chat_template_, *llm_, *episodes_);
      managers_.push_back(std::move(m));
      env_ids.push_back(slot.env_id);
    }
    finished_ = 0;
    for (auto& m : managers_) threads_.emplace_back([this, mgr = m.get()] { run_env(*mgr); });
    log::info("{}: rollout started ({} mode, seed {}, {} env threads)", ctx_.worker_name, mode, seed, threads_.size());
    return {{"envs", managers_.size()}, {"env_ids", env_ids}};
  }

  void run_env(agentic::EnvManager& m) {
    try {
      m.run();
    } catch (const std::exception& e) {
      if (stopping_) {
        log::debug("{}: env {} ended while stopping: {}", ctx_.worker_name, m.options().env_id, e.what());
      } else {
        log::error("{}: env {} ({}) failed: {}", ctx_.worker_name, m.options().env_id, m.options().spec.tag, e.what());
        log::flush();
        std::_Exit(1);
      }
    }
    std::lock_guard<std::mutex> g(mu_);
    ++finished_;
    cv_.notify_all();
  }

  // Stops every manager, waits up to `grace` for their requests to come back aborted, then cuts
  // the router and the queue off (their waits fail) and joins the threads.
  nlohmann::json stop(std::chrono::milliseconds grace) {
    std::vector<std::thread> threads;
    {
      std::unique_lock<std::mutex> g(mu_);
      if (threads_.empty()) return {{"stopped", 0}, {"rollouts", rollouts_}};
      stopping_ = true;
      for (auto& m : managers_) m->stop();
      episodes_->close();
      threads = std::move(threads_);
      threads_.clear();
      if (!cv_.wait_for(g, grace, [&] { return finished_ == threads.size(); })) {
        if (grace.count() > 0)
          log::warn("{}: {} env thread(s) still waiting {} s after stop; cutting the router and queue off",
                    ctx_.worker_name, threads.size() - finished_, grace.count() / 1000);
        llm_->disconnect("the env worker " + ctx_.worker_name + " stopped its rollout");
        episodes_->disconnect("the env worker " + ctx_.worker_name + " stopped its rollout");
      }
    }
    for (auto& t : threads) t.join();
    std::lock_guard<std::mutex> g(mu_);
    for (const auto& m : managers_) rollouts_ += m->rollouts_done();
    managers_.clear();
    episodes_.reset();
    llm_.reset();
    stopping_ = false;
    log::info("{}: rollout stopped ({} env threads joined)", ctx_.worker_name, threads.size());
    return {{"stopped", threads.size()}, {"rollouts", rollouts_}};
  }

  nlohmann::json stats() {
    std::lock_guard<std::mutex> g(mu_);
    int64_t rollouts = rollouts_;
    for (const auto& m : managers_) rollouts += m->rollouts_done();
    return {{"envs", slots_.size()},
            {"running", !threads_.empty()},
            {"env_threads", threads_.size() - std::min(finished_, threads_.size())},
            {"rollouts", rollouts}};
  }

  runtime::WorkerContext& ctx_;
  const config::EnvManagerConfig& fleet_;
  const bool val_;
  std::vector<agentic::EnvSlot> slots_;
  std::map<std::string, agentic::EnvSpec> specs_;
  std::unique_ptr<model::Tokenizer> tokenizer_;
  std::unique_ptr<model::ChatTemplate> chat_template_;
  SamplingParams generation_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> stopping_{false};
  std::unique_ptr<RemoteLlmClient> llm_;
  std::unique_ptr<RemoteEpisodeSource> episodes_;
  std::vector<std::unique_ptr<agentic::EnvManager>> managers_;
  std::vector<std::thread> threads_;
  size_t finished_ = 0;
  int64_t rollouts_ = 0;  // of earlier rollouts (start/stop cycles)
};

}  // namespace

void register_env_role() {
  runtime::register_role("env_manager", [](runtime::WorkerContext& c) { return std::make_unique<EnvRole>(c); });
}

}  // namespace roll::workers
