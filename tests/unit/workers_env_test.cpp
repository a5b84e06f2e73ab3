// Env workers through real processes (docs/agentic.md): 1 actor_infer rank (tiny fp32 model),
// the env-affinity router and the GroupQueueManager hosted in this (driver) process as services,
// 2 train_env worker processes with 4 FrozenLake TrajEnvManagers each. The router service logs
// every answer the infer worker gave, so each rollout is checked token by token against them.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "roll/agentic/env_layout.h"
#include "roll/agentic/frozen_lake.h"
#include "roll/agentic/step_env_manager.h"
#include "roll/config/load.h"
#include "roll/config/placement.h"
#include "roll/core/error.h"
#include "roll/model/model_init.h"
#include "roll/model/tokenizer.h"
#include "roll/runtime/rpc_client.h"
#include "roll/runtime/rpc_server.h"
#include "roll/runtime/runtime.h"
#include "roll/workers/group_queue_service.h"
#include "roll/workers/remote_episode_source.h"
#include "roll/workers/generate_protocol.h"
#include "roll/workers/request_router.h"
#include "roll/workers/router_service.h"
#include "unit/multiprocess.h"
#include "unit/worker_runtime.h"

namespace roll::workers {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using runtime::Payload;

constexpr int64_t kSeqLen = 1024, kMaxSteps = 3, kTokensPerStep = 12, kRunSeed = 1234;

std::string config_yaml(const std::string& model_dir) {
  return fmt::format(R"(exp_name: envw
seed: 7
num_gpus_per_node: 1
rollout_batch_size: 8
val_batch_size: 2
sequence_length: {seq}
adv_estimator: grpo
init_kl_coef: 0.0
pretrain: {model}
actor_train:
  training_args: {{per_device_train_batch_size: 1, gradient_accumulation_steps: 1}}
  strategy_args: {{strategy_name: fsdp2_train}}
  device_mapping: "[0]"
actor_infer:
  generating_args: {{max_new_tokens: {tokens}, temperature: 1.0, top_p: 1.0, top_k: -1}}
  strategy_args: {{strategy_name: vllm}}
  device_mapping: "[0]"
train_env_manager:
  max_env_num_per_worker: 4
  num_env_groups: 2
  group_size: 4
  tags: [FrozenLake]
  num_groups_partition: [2]
val_env_manager:
  max_env_num_per_worker: 2
  num_env_groups: 2
  group_size: 1
  tags: [FrozenLakeStep]
  num_groups_partition: [2]
custom_envs:
  FrozenLake:
    env_type: frozen_lake
    max_steps: {steps}
    max_tokens_per_step: {tokens}
    env_manager_cls: roll.pipeline.agentic.env_manager.traj_env_manager.TrajEnvManager
    agent_system_template: "You're a helpful assistant. You are a good game player."
    agent_template: "Turn {{turn_idx}}:\nObservation:\n{{observation}}\nYou have {{actions_left}} actions left. Max response length: {{max_response_length}} words (tokens).\n"
    env_config: {{is_slippery: false, format_penalty: -0.01}}
  FrozenLakeStep:
    env_type: frozen_lake
    max_steps: {steps}
    max_tokens_per_step: {tokens}
    env_manager_cls: roll.pipeline.agentic.env_manager.step_env_manager.StepEnvManager
    history_length: 2
    agent_system_template: "You're a helpful assistant."
    agent_template: "{{env_instruction}}\nRecent History: [{{history}}]\nStep {{current_step}}: [{{current_observation}}]\n"
    env_config: {{is_slippery: false, format_penalty: -0.01}}
)",
                     fmt::arg("seq", kSeqLen), fmt::arg("model", model_dir), fmt::arg("tokens", kTokensPerStep),
                     fmt::arg("steps", kMaxSteps));
}

// What the infer worker answered, as the router service saw it.
struct Answer {
  json request;  // {rid, input_ids, sampling_params}
  std::string affinity_key;
  json output;
};

class EnvFixture {
 public:
  // env_cluster: train_env or val_env, started with one actor_infer rank.
  EnvFixture(const std::string& dir, const std::string& env_cluster) : dir_(dir), cluster_(env_cluster) {
    model::ModelInitOptions mo;
    mo.preset = "tiny";
    mo.out_dir = dir + "/model";
    model::init_model_dir(mo);
    std::filesystem::create_directories(dir + "/cfg");
    std::ofstream(dir + "/cfg/envw.yaml") << config_yaml(mo.out_dir);
    config::LoadRequest req;
    req.compose.config_path = dir + "/cfg";
    req.compose.config_name = "envw";
    req.platform = config::Platform::cpu;
    loaded = config::load_config(req);
    const config::PlacementPlan plan = config::make_placement_plan(loaded.config, config::Platform::cpu);

    runtime::RuntimeOptions o = test::worker_runtime_options(dir);
    o.config_request = req;  // the env workers read their fleet from the job's config
    rt = std::make_unique<runtime::Runtime>(o);
    runtime::ClusterSpec infer_spec, env_spec;
    infer_spec.placement = *plan.find("actor_infer");
    infer_spec.role = "actor_infer";
    infer_spec.options = {{"dtype", "fp32"}, {"max_model_len", kSeqLen}, {"warm_up", false}};
    env_spec.placement = *plan.find(env_cluster);
    env_spec.role = "env_manager";
    auto clusters = rt->start({infer_spec, env_spec});
    infer = clusters[0];
    envs = clusters[1];

    router = std::make_unique<RequestRouter>(
        std::vector<std::shared_ptr<runtime::RpcClient>>{
            std::make_shared<runtime::RpcClient>(infer->endpoint(0), infer->describe(0))},
        RouterKind::env_affinity);
    router_server = std::make_unique<runtime::RpcServer>("tcp://127.0.0.1:*");
    bind_router(*router_server, *router);
    // The same generate_request, logging each answer before it goes back to the env worker.
    router_server->on(
        "generate_request",
        [this](Payload p, runtime::Responder& reply) {
          RoutedRequest routed = routed_request_from_json(p.args);
          const std::string key = routed.affinity_key;
          json request = p.args;
          request.erase("affinity_key");
          auto shared = std::make_shared<runtime::Responder>(std::move(reply));
          router->generate(std::move(routed.request), key,
                           [this, request, key, shared](const RequestOutput* out, const std::string& e) {
                             if (!out) return shared->fail(e);
                             json answer = output_to_json(*out);
                             {
                               std::lock_guard<std::mutex> g(mu);
                               answers[request["rid"].get<std::string>()] = Answer{request, key, answer};
                             }
                             shared->ok(Payload(answer));
                           });
        },
        runtime::RunMode::inline_);

    const bool val = env_cluster == "val_env";
    const auto& fleet = val ? loaded.config.val_env_manager : loaded.config.train_env_manager;
    agentic::GroupQueueOptions qo;
    qo.num_groups = fleet.num_env_groups;
    qo.group_size = fleet.group_size;
    qo.group_size_redundancy = fleet.group_size_redundancy;
    // Validation plays val_batch_size trajectories, then every env exits (finite mode).
    qo.episodes_per_step = val ? loaded.config.val_batch_size / (fleet.num_env_groups * fleet.group_size)
                               : fleet.max_traj_per_env;
    if (val) qo.max_episodes_per_group = qo.episodes_per_step;
    queue = std::make_unique<agentic::GroupQueueManager>(qo);
    queue_server = std::make_unique<runtime::RpcServer>("tcp://127.0.0.1:*");
    bind_group_queue(*queue_server, *queue);
    serving.emplace_back([this] { router_server->serve(); });
    serving.emplace_back([this] { queue_server->serve(); });
  }
  ~EnvFixture() {
    queue->shutdown();
    router_server->stop();
    queue_server->stop();
    for (auto& t : serving) t.join();
  }

  std::vector<Payload> call_envs(const std::string& method, json args = json::object()) {
    return envs->call(method, runtime::Dispatch::one_to_all, Payload(std::move(args))).get_all();
  }
  // Every log line of the env workers.
  std::string env_logs() const {
    std::string all;
    for (const auto& f : std::filesystem::directory_iterator(dir_ + "/logs"))
      if (f.path().filename().string().find(cluster_) != std::string::npos) {
        std::ifstream in(f.path());
        all += std::string(std::istreambuf_iterator<char>(in), {});
      }
    return all;
  }

  std::string dir_, cluster_;
  config::LoadedConfig loaded;
  std::unique_ptr<runtime::Runtime> rt;
  std::shared_ptr<runtime::Cluster> infer, envs;
  std::unique_ptr<RequestRouter> router;
  std::unique_ptr<runtime::RpcServer> router_server, queue_server;
  std::unique_ptr<agentic::GroupQueueManager> queue;
  std::vector<std::thread> serving;
  std::mutex mu;
  std::map<std::string, Answer> answers;
};

// The answers of one episode of one env, in request order (rid = <mode>_<tag>_<env>_<episode>_<n>).
std::vector<Answer> answers_of(EnvFixture& f, int64_t env, int64_t episode, const std::string& mode_and_tag) {
  const std::string prefix = fmt::format("{}_{}_{}_", mode_and_tag, env, episode);
  std::map<int64_t, Answer> ordered;
  std::lock_guard<std::mutex> g(f.mu);
  for (const auto& [rid, a] : f.answers)
    if (rid.rfind(prefix, 0) == 0) ordered[std::stoll(rid.substr(prefix.size()))] = a;
  std::vector<Answer> out;
  for (auto& [n, a] : ordered) out.push_back(a);
  return out;
}

// One trajectory against the infer worker's answers and an independent replay of the env.
void check_rollout(EnvFixture& f, const agentic::Rollout& r, const model::Tokenizer& tok, int32_t end_of_turn) {
  SCOPED_TRACE(fmt::format("env {} episode {}", r.env_id, r.episode_id));
  ASSERT_TRUE(r.data);
  const Batch& b = *r.data;
  ASSERT_EQ(b.size(), 1);
  for (const char* k : {"input_ids", "attention_mask", "position_ids", "response_mask", "prompt_mask", "scores"})
    ASSERT_EQ(b.tensor(k).sizes(), (at::IntArrayRef{1, kSeqLen})) << k;
  ASSERT_EQ(b.tensor("infer_logprobs").sizes(), (at::IntArrayRef{1, kSeqLen - 1}));
  EXPECT_EQ(r.group_id, r.env_id / 4);
  EXPECT_EQ(b.get_int("env_ids", 0), r.env_id);
  EXPECT_EQ(b.get_int("group_ids", 0), r.group_id);
  // group seed = the run seed + the group's config-time seed (env_layout.h), in traj_group_id.
  const auto slots = agentic::env_slots(f.loaded.config.train_env_manager, f.loaded.config.seed, false);
  const uint64_t group_seed = kRunSeed + slots.at(r.env_id).group_seed;
  EXPECT_EQ(b.get_string("traj_group_id", 0), fmt::format("FrozenLake_{}_{}_{}", r.group_id, r.episode_id, group_seed));

  const auto answers = answers_of(f, r.env_id, r.episode_id, "train_FrozenLake");
  const json step_scores = b.cell("step_scores", 0);
  ASSERT_EQ(answers.size(), step_scores.size());
  ASSERT_GE(answers.size(), 1u);
  ASSERT_LE(answers.size(), static_cast<size_t>(kMaxSteps));
  EXPECT_EQ(b.meta["metrics"]["env/FrozenLake/num_actions"][0].get<double>(), static_cast<double>(answers.size()));

  const at::Tensor ids_t = b.tensor("input_ids")[0], resp_t = b.tensor("response_mask")[0],
                   logp_t = b.tensor("infer_logprobs")[0];
  auto ids = ids_t.accessor<int64_t, 1>();
  auto resp = resp_t.accessor<int64_t, 1>();
  auto logp = logp_t.accessor<float, 1>();
  agentic::FrozenLake replay(agentic::FrozenLakeConfig::from_json({{"is_slippery", false}, {"format_penalty", -0.01}}));
  replay.reset(group_seed + static_cast<uint64_t>(r.episode_id));
  int64_t pos = 0, response_tokens = 0;
  double episode_score = 0;
  for (size_t k = 0; k < answers.size(); ++k) {
    const Answer& a = answers[k];
    EXPECT_EQ(a.affinity_key, std::to_string(r.env_id));
    const auto input = a.request["input_ids"].get<std::vector<int64_t>>();
    ASSERT_GT(static_cast<int64_t>(input.size()), pos);
    if (k > 0) EXPECT_EQ(input[pos], end_of_turn) << "turn " << k << " starts with the conversation-end token";
    // The request is the trajectory so far: previous turns, then this turn's prompt (mask 0).
    for (int64_t i = 0; i < static_cast<int64_t>(input.size()); ++i) {
      ASSERT_EQ(ids[i], input[i]) << "turn " << k << " token " << i;
      if (i >= pos) ASSERT_EQ(resp[i], 0) << "prompt token " << i;
    }
    pos = static_cast<int64_t>(input.size());
    const std::string reason = a.output["finish_reasons"][0];
    auto out = a.output["output_token_ids"][0].get<std::vector<int64_t>>();
    auto lps = a.output["output_logprobs"][0].get<std::vector<float>>();
    ASSERT_EQ(out.size(), lps.size());
    const int64_t asked = a.request["sampling_params"]["max_new_tokens"].get<int64_t>();
    EXPECT_EQ(asked, std::min<int64_t>(kTokensPerStep, kSeqLen - static_cast<int64_t>(input.size())));
    if (reason == "length") EXPECT_EQ(static_cast<int64_t>(out.size()), asked);
    else EXPECT_EQ(reason, "stop");  // finished: never aborted in this step
    // The env saw the whole response; the sample keeps it without a trailing end token.
    const agentic::EnvStep st = replay.step(tok.decode(std::vector<int32_t>(out.begin(), out.end()), false));
    EXPECT_DOUBLE_EQ(step_scores[k].get<double>(), st.reward) << "turn " << k;
    episode_score += st.reward;
    if (k + 1 < answers.size()) EXPECT_FALSE(st.terminated) << "the episode went on after turn " << k;
    else EXPECT_TRUE(st.terminated || answers.size() == static_cast<size_t>(kMaxSteps));
    if (!out.empty() && out.back() == end_of_turn) {
      out.pop_back();
      lps.pop_back();
    }
    for (size_t j = 0; j < out.size(); ++j, ++pos) {
      ASSERT_EQ(ids[pos], out[j]) << "turn " << k << " response token " << j;
      ASSERT_EQ(resp[pos], 1);
      ASSERT_FLOAT_EQ(logp[pos - 1], lps[j]);  // aligned to predicting token pos
      ASSERT_TRUE(std::isfinite(lps[j]) && lps[j] <= 0.0f);
    }
    response_tokens += static_cast<int64_t>(out.size());
  }
  // Nothing after the last response; padding has no mask.
  EXPECT_EQ(b.tensor("attention_mask").sum().item<int64_t>(), pos);
  EXPECT_EQ(b.tensor("response_mask").sum().item<int64_t>(), response_tokens);
  EXPECT_EQ(b.tensor("prompt_mask").sum().item<int64_t>(),
            static_cast<int64_t>(answers[0].request["input_ids"].size()));
  EXPECT_EQ(b.tensor("position_ids")[0][pos - 1].item<int64_t>(), pos - 1);
  EXPECT_EQ(b.tensor("infer_logprobs").slice(1, pos - 1).abs().sum().item<float>(), 0.0f);
  EXPECT_NEAR(b.tensor("scores")[0][pos - 1].item<float>(), episode_score, 1e-6);  // fp32 storage of |s| ≲ 2
  EXPECT_NEAR(b.tensor("scores").abs().sum().item<float>(), std::abs(episode_score), 1e-6);
  EXPECT_NEAR(b.get_double("episode_scores", 0), episode_score, 1e-9);
}

TEST(WorkersEnv, TrajRolloutsFromTwoEnvWorkersThenStopMidStep) {
  const std::string dir = test::make_scratch_dir();
  EnvFixture f(dir, "train_env");
  const auto tok = model::Tokenizer::from_dir(dir + "/model");
  const int32_t end_of_turn = *tok.token_to_id("<|im_end|>");
  ASSERT_EQ(f.envs->world_size(), 2);  // 8 envs, 4 per worker

  f.queue->advance_step(0);
  const json start = {{"router_endpoint", f.router_server->endpoint()},
                      {"queue_endpoint", f.queue_server->endpoint()},
                      {"seed", kRunSeed},
                      {"mode", "train"}};
  auto started = f.call_envs("start_rollout", start);
  EXPECT_EQ(started[0].args["env_ids"], json({0, 1, 2, 3}));  // ROLL's order: env id / 4 = rank
  EXPECT_EQ(started[1].args["env_ids"], json({4, 5, 6, 7}));
  try {
    f.envs->call_rank(0, "start_rollout", Payload(start)).get();
    ADD_FAILURE() << "a second start_rollout was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already running"), std::string::npos) << e.what();
  }

  auto batch = f.queue->get_batch(8, 0, 60.0);
  ASSERT_TRUE(batch.has_value()) << "no batch within 60 s";
  ASSERT_EQ(batch->size(), 8u);
  std::set<int64_t> env_ids;
  for (const auto& r : *batch) {
    env_ids.insert(r.env_id);
    EXPECT_EQ(r.episode_id, 0);
    EXPECT_EQ(r.start_step, 0);
    check_rollout(f, r, tok, end_of_turn);
  }
  EXPECT_EQ(env_ids, (std::set<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));  // every env played its group's episode
  // Env affinity: all 8 envs on the one rank; every request answered.
  EXPECT_EQ(f.router->stats().in_flight, 0);

  // Step 1 with the router suspended: every env's first request of episode 1 is held there; then
  // stop_rollout aborts each one and ends every env thread.
  f.router->suspend();
  f.queue->advance_step(1);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (f.router->stats().held < 8 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);  // polling a condition, bounded
  ASSERT_EQ(f.router->stats().held, 8);
  auto stopped = f.call_envs("stop_rollout");
  for (const auto& s : stopped) EXPECT_EQ(s.args["stopped"], 4);
  for (int64_t env = 0; env < 8; ++env) {
    const auto held = answers_of(f, env, 1, "train_FrozenLake");
    ASSERT_EQ(held.size(), 1u) << "env " << env;
    EXPECT_EQ(held[0].output["finish_reasons"][0], "abort");
  }
  f.router->resume();
  for (const auto& s : f.call_envs("stats")) {
    EXPECT_EQ(s.args["running"], false);
    EXPECT_EQ(s.args["env_threads"], 0);
    EXPECT_GE(s.args["rollouts"].get<int64_t>(), 4);
  }
  // Every env said it exits (get_batch(-1) waits for all 8), and no request is left anywhere.
  ASSERT_TRUE(f.queue->get_batch(-1, 1, 10.0).has_value()) << "not every env thread called env_exit";
  f.router->wait_complete();
  EXPECT_EQ(f.router->stats().in_flight, 0);
  EXPECT_EQ(f.infer->call_rank(0, "stats").get().args["running"], 0);

  f.envs->shutdown();
  EXPECT_FALSE(f.envs->failure().has_value()) << *f.envs->failure();
  const std::string logs = f.env_logs();
  EXPECT_NE(logs.find("train_env-0: rollout stopped (4 env threads joined)"), std::string::npos) << logs;
  EXPECT_NE(logs.find("train_env-1: rollout stopped (4 env threads joined)"), std::string::npos) << logs;
  EXPECT_NE(logs.find("worker train_env-1 stopping"), std::string::npos) << logs;
  EXPECT_EQ(logs.find("failed"), std::string::npos) << logs;
}

// The val fleet: StepEnvManagers (env_manager_cls of its tag) on one val_env worker, a finite
// queue (val_batch_size trajectories), one sample per turn.
TEST(WorkersEnv, ValFleetOfStepEnvManagersPlaysItsEpisodesAndExits) {
  const std::string dir = test::make_scratch_dir();
  EnvFixture f(dir, "val_env");
  const auto tok = model::Tokenizer::from_dir(dir + "/model");
  ASSERT_EQ(f.envs->world_size(), 1);
  f.queue->advance_step(0);
  auto started = f.call_envs("start_rollout", {{"router_endpoint", f.router_server->endpoint()},
                                               {"queue_endpoint", f.queue_server->endpoint()},
                                               {"seed", f.loaded.config.seed}});
  EXPECT_EQ(started[0].args["env_ids"], json({0, 1}));
  // Finite mode: the batch comes when both envs have played their episode and exited.
  auto batch = f.queue->get_batch(-1, 0, 60.0);
  ASSERT_TRUE(batch.has_value());
  ASSERT_EQ(batch->size(), 2u);
  const auto slots = agentic::env_slots(f.loaded.config.val_env_manager, f.loaded.config.seed, true);
  for (const auto& r : *batch) {
    SCOPED_TRACE(fmt::format("env {}", r.env_id));
    const Batch& b = *r.data;
    // rids of the val fleet start with "val": train and val requests never collide in a router.
    const auto answers = answers_of(f, r.env_id, r.episode_id, "val_FrozenLakeStep");
    ASSERT_EQ(b.size(), static_cast<int64_t>(answers.size()));
    agentic::FrozenLake replay(agentic::FrozenLakeConfig::from_json({{"is_slippery", false}, {"format_penalty", -0.01}}));
    replay.reset(static_cast<uint64_t>(f.loaded.config.seed) + slots.at(r.env_id).group_seed);
    double episode_score = 0;
    std::vector<double> rewards;
    for (int64_t i = 0; i < b.size(); ++i) {
      const auto input = answers[i].request["input_ids"].get<std::vector<int64_t>>();
      const auto out = answers[i].output["output_token_ids"][0].get<std::vector<int64_t>>();
      const auto lps = answers[i].output["output_logprobs"][0].get<std::vector<float>>();
      // A fresh prompt per turn; the response as generated, end token included.
      const auto P = static_cast<int64_t>(input.size()), L = P + static_cast<int64_t>(out.size());
      for (int64_t k = 0; k < L; ++k) {
        ASSERT_EQ(b.tensor("input_ids")[i][k].item<int64_t>(), k < P ? input[k] : out[k - P]) << i << " " << k;
        ASSERT_EQ(b.tensor("response_mask")[i][k].item<int64_t>(), k < P ? 0 : 1);
        if (k >= P) ASSERT_FLOAT_EQ(b.tensor("infer_logprobs")[i][k - 1].item<float>(), lps[k - P]);
      }
      EXPECT_EQ(b.tensor("attention_mask")[i].sum().item<int64_t>(), L);
      EXPECT_EQ(b.tensor("prompt_mask")[i].sum().item<int64_t>(), P);
      EXPECT_EQ(b.get_string("state_hash", i), agentic::state_hash(replay.state_key()));
      const std::string prompt = tok.decode(std::vector<int32_t>(input.begin(), input.end()), false);
      EXPECT_NE(prompt.find(fmt::format("Step {}: [{}]", i + 1, replay.render())), std::string::npos) << prompt;
      const double reward = replay.step(tok.decode(std::vector<int32_t>(out.begin(), out.end()), false)).reward;
      EXPECT_DOUBLE_EQ(b.get_double("step_scores", i), reward);
      EXPECT_NEAR(b.tensor("scores")[i][L - 1].item<float>(), reward, 1e-6);
      EXPECT_EQ(b.get_int("step", i), i);
      episode_score += reward;
    }
    for (int64_t i = 0; i < b.size(); ++i) EXPECT_NEAR(b.get_double("episode_scores", i), episode_score, 1e-9);
  }
  auto stopped = f.call_envs("stop_rollout");
  EXPECT_EQ(stopped[0].args["stopped"], 2);  // already ended by the queue; joined here
  EXPECT_EQ(stopped[0].args["rollouts"], 2);
}

// A failing env thread ends its worker, and the driver sees which worker and why.
TEST(WorkersEnv, AFailingEnvThreadEndsItsWorkerWithTheError) {
  const std::string dir = test::make_scratch_dir();
  EnvFixture f(dir, "val_env");
  // A queue with one group for a fleet of two: env 1 (group 1) is refused.
  agentic::GroupQueueOptions qo;
  qo.num_groups = 1;
  agentic::GroupQueueManager small(qo);
  runtime::RpcServer server("tcp://127.0.0.1:*");
  bind_group_queue(server, small);
  std::thread serving([&] { server.serve(); });
  // Stops the service on every way out of the test (an ASSERT returns early).
  struct StopServing {
    agentic::GroupQueueManager& queue;
    runtime::RpcServer& server;
    std::thread& thread;
    ~StopServing() {
      queue.shutdown();
      server.stop();
      if (thread.joinable()) thread.join();
    }
  } stop_serving{small, server, serving};
  try {
    f.envs->call_rank(0, "start_rollout",
                      Payload(json{{"router_endpoint", f.router_server->endpoint()},
                                   {"queue_endpoint", server.endpoint()},
                                   {"seed", 1}}))
        .get();
  } catch (const Error&) {
    // The failing env thread may end the worker before start_rollout's answer leaves it.
  }
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!f.envs->failure() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);  // polling a condition, bounded
  ASSERT_TRUE(f.envs->failure().has_value()) << "the worker kept running";
  const std::string why = *f.envs->failure();
  EXPECT_NE(why.find("val_env-0"), std::string::npos) << why;
  EXPECT_NE(why.find("env 1 (FrozenLakeStep) failed"), std::string::npos) << why;
  EXPECT_NE(why.find("group id 1 outside [0, 1)"), std::string::npos) << why;
}

// The GroupQueueManager service and its client in one process.
TEST(WorkersEnv, GroupQueueServiceWaitsWithoutBlockingAndCarriesRollouts) {
  agentic::GroupQueueOptions qo;
  qo.num_groups = 2;
  qo.group_size = 1;
  agentic::GroupQueueManager queue(qo);
  runtime::RpcServer server("tcp://127.0.0.1:*");
  bind_group_queue(server, queue);
  std::thread serving([&] { server.serve(); });
  RemoteEpisodeSource source(server.endpoint());

  // Two envs wait on the socket thread at once; an env_exit (serial) still goes through meanwhile.
  auto a = std::async(std::launch::async, [&] { return source.get_episode(0, 0); });
  auto b = std::async(std::launch::async, [&] { return source.get_episode(1, 1); });
  EXPECT_EQ(a.wait_for(200ms), std::future_status::timeout);
  source.env_exit(1, 7);
  EXPECT_EQ(b.wait_for(0ms), std::future_status::timeout);
  queue.advance_step(0);
  auto ea = a.get(), eb = b.get();
  ASSERT_TRUE(ea && eb);
  EXPECT_EQ(ea->episode_id, 0);
  EXPECT_EQ(eb->start_step, 0);

  // A rollout's Batch (tensors, columns, meta) arrives whole.
  Batch data(1);
  data.set_tensor("input_ids", at::arange(6, at::kLong).view({1, 6}));
  data.set_column("traj_id", {"FrozenLake_0_0_9_0"});
  data.meta["metrics"] = {{"env/FrozenLake/success", {1.0}}};
  source.put(agentic::Rollout{0, 0, 0, 0, std::make_shared<const Batch>(data)});
  auto got = queue.get_batch(1, 0, 5.0);
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->size(), 1u);
  const Batch& back = *got->front().data;
  EXPECT_TRUE(back.tensor("input_ids").equal(data.tensor("input_ids")));
  EXPECT_EQ(back.get_string("traj_id", 0), "FrozenLake_0_0_9_0");
  EXPECT_EQ(back.meta["metrics"], data.meta["metrics"]);

  // close() ends a wait that has no episode coming; the service's answer later finds no reader.
  auto c = std::async(std::launch::async, [&] { return source.get_episode(0, 0); });
  EXPECT_EQ(c.wait_for(100ms), std::future_status::timeout);
  source.close();
  EXPECT_FALSE(c.get().has_value());
  EXPECT_FALSE(source.get_episode(1, 1).has_value());  // closed: at once

  // Bad arguments come back as errors naming them.
  runtime::RpcClient raw(server.endpoint(), "queue");
  try {
    raw.call_sync("get_episode", Payload(json{{"group_id", 9}, {"env_id", 0}}), 5s);
    ADD_FAILURE() << "group 9 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("group id 9"), std::string::npos) << e.what();
  }
  try {
    raw.call_sync("put", Payload(json{{"group_id", 0}}), 5s);
    ADD_FAILURE() << "a put without ids accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'episode_id'"), std::string::npos) << e.what();
  }
  queue.shutdown();
  server.stop();
  serving.join();
}

}  // namespace
}  // namespace roll::workers
