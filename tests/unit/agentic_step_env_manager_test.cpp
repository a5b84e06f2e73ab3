// StepEnvManager: one sample per turn with a scripted LLM (docs/agentic.md: fresh prompt per turn with the
// recent turns as text, the turn's reward as its score, state hashes for GiGPO).
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "agentic_test_util.h"
#include "roll/agentic/frozen_lake.h"
#include "roll/agentic/step_env_manager.h"
#include "roll/core/batch.h"
#include "roll/core/error.h"
#include "roll/model/chat_template.h"
#include "roll/model/model_init.h"
#include "roll/model/tokenizer.h"

using namespace roll;
using namespace roll::agentic;
namespace fs = std::filesystem;

namespace {

using roll::testing::frozen_lake_answer;
using roll::testing::NoEpisodes;
using roll::testing::ScriptedLlm;

// step_envs.yaml's template shape (docs/config.md).
const char* kStepTemplate =
    "## Env Instruction:\n{env_instruction}\n## State Description: Prior to this step, you have completed {step_count} "
    "steps. Recent History: Below are the most recent {history_length} observations, and your responses: [{history}]\n"
    "Current State: You are currently at step {current_step}. Your current observation is: [{current_observation}]\n"
    "## Output Format Requirement: Max response length: {max_response_length} words (tokens). Decide the next action:";

EnvSpec step_spec() {
  EnvSpec s;
  s.tag = "FrozenLakeStep";
  s.env_type = "frozen_lake";
  s.env_config = {{"is_slippery", false}, {"format_penalty", -0.01}};
  s.max_steps = 4;
  s.max_tokens_per_step = 64;
  s.history_length = 3;  // ROLL's history[-3:-1]: the 2 turns before the current one
  s.agent_system_template = "You're a helpful assistant.";
  s.agent_template = kStepTemplate;
  s.env_manager_cls = "roll.pipeline.agentic.env_manager.step_env_manager.StepEnvManager";
  return s;
}

struct Fixture {
  model::Tokenizer tok = model::Tokenizer::from_dir(model::default_tokenizer_dir());
  model::ChatTemplate tmpl = model::ChatTemplate::from_model_dir("qwen2_5", model::default_tokenizer_dir());
};

bool have_tokenizer() { return fs::exists(model::default_tokenizer_dir() + "/tokenizer.json"); }

}  // namespace

TEST(AgenticStepEnvManager, OneSamplePerTurnWithHistoryAndStateHashes) {
  if (!have_tokenizer()) GTEST_SKIP() << "run scripts/setup for the tokenizer";
  Fixture f;
  const uint64_t group_seed = 300;
  // An episode whose shortest path is at least 3 moves, so 2 moves never end it.
  int64_t episode = 0;
  std::vector<int> path;
  for (;; ++episode) {
    FrozenLake probe(FrozenLakeConfig::from_json(step_spec().env_config));
    probe.reset(group_seed + episode);
    path = FrozenLake::solve(probe.board(), probe.player_row(), probe.player_col());
    if (path.size() >= 3) break;
  }
  // invalid, move, invalid, move
  const std::vector<std::string> replies = {"<answer>Jump</answer>", frozen_lake_answer(path[0]),
                                            "<answer>Fly</answer>", frozen_lake_answer(path[1])};
  ScriptedLlm llm(f.tok, replies);
  NoEpisodes none;
  EnvManagerOptions o;
  o.spec = step_spec();
  o.group_id = 1;
  o.env_id = 3;
  o.group_seed = group_seed;
  o.sequence_length = 1024;
  o.generation.max_new_tokens = 100;
  StepEnvManager mgr(o, f.tok, f.tmpl, llm, none);
  auto r = mgr.play_episode(episode, 2);
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(llm.requests.size(), 4u);
  const Batch& b = *r->data;
  ASSERT_EQ(b.size(), 4);
  EXPECT_EQ(r->start_step, 2);
  EXPECT_EQ(r->env_id, 3);

  // The independent replay: the states each turn acted on, and their rewards.
  FrozenLake replay(FrozenLakeConfig::from_json(step_spec().env_config));
  std::vector<std::string> states, observations;
  std::vector<double> rewards;
  observations.push_back(replay.reset(group_seed + episode).observation);
  for (const auto& reply : replies) {
    states.push_back(replay.state_key());
    EnvStep st = replay.step(reply);
    rewards.push_back(st.reward);
    observations.push_back(st.observation);
  }
  EXPECT_EQ(rewards, (std::vector<double>{-0.01, 0.0, -0.01, 0.0}));

  for (int64_t i = 0; i < 4; ++i) {
    const auto& in = llm.requests[i].input_ids;
    const auto reply = f.tok.encode(replies[i], false);
    const int64_t P = static_cast<int64_t>(in.size()), L = P + static_cast<int64_t>(reply.size());
    // A fresh prompt per turn: never the previous turn's tokens extended.
    if (i > 0) {
      const auto& prev = llm.requests[i - 1].input_ids;
      EXPECT_FALSE(in.size() > prev.size() && std::equal(prev.begin(), prev.end(), in.begin())) << "turn " << i;
    }
    at::Tensor ids = b.tensor("input_ids")[i];
    for (int64_t k = 0; k < L; ++k) {
      ASSERT_EQ(ids[k].item<int64_t>(), k < P ? in[k] : reply[k - P]) << "row " << i << " token " << k;
      ASSERT_EQ(b.tensor("response_mask")[i][k].item<int64_t>(), k < P ? 0 : 1) << i << " " << k;
      ASSERT_EQ(b.tensor("position_ids")[i][k].item<int64_t>(), k);
    }
    EXPECT_EQ(b.tensor("attention_mask")[i].sum().item<int64_t>(), L);
    EXPECT_EQ(b.tensor("prompt_mask")[i].sum().item<int64_t>(), P);
    EXPECT_EQ(b.tensor("response_mask")[i].sum().item<int64_t>(), L - P);
    // The turn's own reward at its last token, nothing elsewhere; fp32 storage of |r| ≤ 1: ≤ 6e-8.
    EXPECT_NEAR(b.tensor("scores")[i][L - 1].item<float>(), rewards[i], 1e-6);
    EXPECT_NEAR(b.tensor("scores")[i].abs().sum().item<float>(), std::abs(rewards[i]), 1e-6);
    EXPECT_NEAR(b.tensor("infer_logprobs")[i][P - 1].item<float>(), -0.5, 1e-6);
    EXPECT_EQ(b.get_int("step", i), i);
    EXPECT_DOUBLE_EQ(b.get_double("step_scores", i), rewards[i]);
    EXPECT_NEAR(b.get_double("episode_scores", i), -0.02, 1e-9);
    EXPECT_EQ(b.get_string("state_hash", i), state_hash(states[i]));
    EXPECT_EQ(b.get_string("traj_group_id", i), fmt::format("FrozenLakeStep_1_{}_300", episode));
    EXPECT_EQ(b.get_int("env_ids", i), 3);
    EXPECT_EQ(b.get_int("group_ids", i), 1);

    // The prompt names the step and shows the observation this turn saw.
    const std::string text = f.tok.decode(in, false);
    EXPECT_NE(text.find(fmt::format("you have completed {} steps", i)), std::string::npos) << text;
    EXPECT_NE(text.find(fmt::format("currently at step {}. Your current observation is: [{}]", i + 1, observations[i])),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("You are solving the FrozenLake puzzle"), std::string::npos);
  }
  // An invalid action keeps the state (equal hashes); a move changes it.
  EXPECT_EQ(b.get_string("state_hash", 0), b.get_string("state_hash", 1));
  EXPECT_NE(b.get_string("state_hash", 1), b.get_string("state_hash", 2));
  EXPECT_EQ(b.get_string("state_hash", 2), b.get_string("state_hash", 3));

  // History window of 2 turns: turn 3 shows turns 1 and 2, turn 4 shows 2 and 3, never turn 1.
  const std::string t1 = f.tok.decode(llm.requests[0].input_ids, false);
  const std::string t3 = f.tok.decode(llm.requests[2].input_ids, false);
  const std::string t4 = f.tok.decode(llm.requests[3].input_ids, false);
  EXPECT_NE(t1.find("most recent 0 observations, and your responses: []"), std::string::npos) << t1;
  const std::string step1 = fmt::format(
      "(step: 1, observation: {}, action: Jump(IMPORTANT TIPS: this action is not valid", observations[0]);
  const char* names[] = {"Left", "Down", "Right", "Up"};
  const std::string step2 =
      fmt::format("(step: 2, observation: {}, action: {}, reward: 0.0)", observations[1], names[path[0]]);
  EXPECT_NE(t3.find("most recent 2 observations"), std::string::npos) << t3;
  EXPECT_NE(t3.find(step1), std::string::npos) << t3;
  EXPECT_NE(t3.find(step2), std::string::npos) << t3;
  EXPECT_EQ(t4.find("(step: 1,"), std::string::npos) << t4;
  EXPECT_NE(t4.find(step2), std::string::npos) << t4;
  EXPECT_NE(t4.find("(step: 3, observation: "), std::string::npos) << t4;

  // Metrics: mean over turns for validity, one entry per episode.
  EXPECT_DOUBLE_EQ(b.meta["metrics"]["env/FrozenLakeStep/action_is_valid"][0].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(b.meta["metrics"]["env/FrozenLakeStep/num_actions"][0].get<double>(), 4.0);
  double mean_len = 0;
  for (const auto& reply : replies) mean_len += static_cast<double>(f.tok.encode(reply, false).size()) / 4.0;
  EXPECT_DOUBLE_EQ(b.meta["metrics"]["env/response_length"][0].get<double>(), mean_len);
}

TEST(AgenticStepEnvManager, AbortedTurnDropsTheEpisodeAndTooLongPromptIsAnError) {
  if (!have_tokenizer()) GTEST_SKIP() << "run scripts/setup for the tokenizer";
  Fixture f;
  NoEpisodes none;
  EnvManagerOptions o;
  o.spec = step_spec();
  o.env_id = 6;
  o.generation.max_new_tokens = 100;
  {
    ScriptedLlm llm(f.tok, {"<answer>Up</answer>"});
    llm.finish_reason = "abort";
    StepEnvManager mgr(o, f.tok, f.tmpl, llm, none);
    EXPECT_FALSE(mgr.play_episode(0, 0).has_value());
    EXPECT_EQ(llm.requests.size(), 1u);
  }
  o.sequence_length = 64;  // the first prompt alone is longer
  ScriptedLlm llm(f.tok, {"<answer>Up</answer>"});
  StepEnvManager mgr(o, f.tok, f.tmpl, llm, none);
  try {
    mgr.play_episode(0, 0);
    ADD_FAILURE() << "a prompt over sequence_length was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("env 6 (FrozenLakeStep)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sequence_length 64"), std::string::npos) << e.what();
  }
}

// Asynchronous training (partial rollout): a turn cut off by the abort before a model update goes
// on from its partial output as a new request (prompt + partial tokens, the rest of the budget),
// and the turn's response is the two pieces joined.
TEST(AgenticStepEnvManager, APartialTurnContinuesWithPartialRollout) {
  if (!have_tokenizer()) GTEST_SKIP() << "run scripts/setup for the tokenizer";
  Fixture f;
  NoEpisodes none;
  EnvManagerOptions o;
  o.spec = step_spec();
  o.env_id = 2;
  o.generation.max_new_tokens = 100;
  o.partial_rollout = true;
  ScriptedLlm llm(f.tok, {"<answer>", "Up</answer>"});
  llm.finish_reasons = {"abort", "stop"};
  StepEnvManager mgr(o, f.tok, f.tmpl, llm, none);
  auto rollout = mgr.play_episode(0, 0);
  ASSERT_TRUE(rollout.has_value()) << "the episode is played to its end, not dropped";
  ASSERT_GE(llm.requests.size(), 2u);
  ASSERT_EQ(llm.requests.size() % 2, 0u) << "every turn: the cut-off request and its continuation";
  const auto head = f.tok.encode("<answer>", false);
  for (size_t i = 0; i + 1 < llm.requests.size(); i += 2) {
    const auto& first = llm.requests[i];
    const auto& rest = llm.requests[i + 1];
    std::vector<int32_t> expected = first.input_ids;
    expected.insert(expected.end(), head.begin(), head.end());
    EXPECT_EQ(rest.input_ids, expected) << "turn " << i / 2;
    EXPECT_EQ(rest.params.max_new_tokens, first.params.max_new_tokens - static_cast<int64_t>(head.size()));
    EXPECT_NE(rest.params.seed, first.params.seed);
    EXPECT_NE(rest.rid, first.rid);
  }
  // The first turn's sample: its response tokens are the two pieces, in order.
  const Batch& b = *rollout->data;
  const at::Tensor ids = b.tensor("input_ids")[0], mask = b.tensor("response_mask")[0];
  std::vector<int32_t> got;
  for (int64_t t = 0; t < ids.size(0); ++t)
    if (mask[t].item<int64_t>() != 0) got.push_back(static_cast<int32_t>(ids[t].item<int64_t>()));
  std::vector<int32_t> want = head;
  const auto tail = f.tok.encode("Up</answer>", false);
  want.insert(want.end(), tail.begin(), tail.end());
  EXPECT_EQ(got, want);
}

TEST(AgenticStepEnvManager, StateHashIsStableHex) {
  EXPECT_EQ(state_hash(""), "cbf29ce484222325");  // FNV-1a 64 offset basis
  EXPECT_EQ(state_hash("a"), "af63dc4c8601ec8c");  // published FNV-1a test vector
  EXPECT_NE(state_hash("P___\n_O__"), state_hash("_P__\n_O__"));
}

// Sampling seeds depend on (group seed, mode, episode, slot, turn) only: two envs playing the same
// slot of an episode, or one env replaying it, send the same seeds; other slots, turns, episodes
// and the val fleet get others (exact resume, docs/agentic.md).
TEST(AgenticStepEnvManager, RequestSeedsFollowEpisodeSlotAndTurn) {
  if (!have_tokenizer()) GTEST_SKIP() << "run scripts/setup for the tokenizer";
  Fixture f;
  NoEpisodes none;
  auto seeds = [&](int64_t env_id, const std::string& mode, int64_t episode, int64_t slot) {
    EnvManagerOptions o;
    o.spec = step_spec();
    o.env_id = env_id;
    o.group_seed = 300;
    o.mode = mode;
    o.generation.max_new_tokens = 100;
    ScriptedLlm llm(f.tok, {"<answer>Jump</answer>"});  // invalid: every episode runs max_steps turns
    StepEnvManager mgr(o, f.tok, f.tmpl, llm, none);
    std::vector<uint64_t> out;
    for (int rep = 0; rep < 2; ++rep) {
      EXPECT_TRUE(mgr.play_episode(episode, 0, slot).has_value());
      for (const auto& r : llm.requests) {
        EXPECT_TRUE(r.params.seed.has_value());
        out.push_back(r.params.seed.value_or(0));
      }
      llm.requests.clear();
    }
    EXPECT_EQ(out.size(), 8u);
    // The replay sends the first play's seeds; within a play the turns differ.
    EXPECT_TRUE(std::equal(out.begin(), out.begin() + 4, out.begin() + 4));
    EXPECT_EQ(std::set<uint64_t>(out.begin(), out.begin() + 4).size(), 4u);
    return std::vector<uint64_t>(out.begin(), out.begin() + 4);
  };
  const auto base = seeds(3, "train", 5, 1);
  EXPECT_EQ(seeds(8, "train", 5, 1), base);  // another env, same episode and slot
  EXPECT_NE(seeds(3, "train", 5, 0), base);
  EXPECT_NE(seeds(3, "train", 6, 1), base);
  EXPECT_NE(seeds(3, "val", 5, 1), base);
}

// render: the val episode as text in meta.render (what render_save_dir dumps), nothing otherwise.
TEST(AgenticStepEnvManager, RenderTextHoldsEveryTurn) {
  if (!have_tokenizer()) GTEST_SKIP() << "run scripts/setup for the tokenizer";
  Fixture f;
  NoEpisodes none;
  EnvManagerOptions o;
  o.spec = step_spec();
  o.spec.max_steps = 2;
  o.group_id = 2;
  o.env_id = 4;
  o.group_seed = 300;
  o.generation.max_new_tokens = 100;
  const std::vector<std::string> replies = {"<answer>Jump</answer>", "<answer>Fly</answer>"};
  {
    ScriptedLlm llm(f.tok, replies);
    StepEnvManager mgr(o, f.tok, f.tmpl, llm, none);
    EXPECT_FALSE(mgr.play_episode(1, 0)->data->meta.contains("render"));
  }
  o.render = true;
  ScriptedLlm llm(f.tok, replies);
  StepEnvManager mgr(o, f.tok, f.tmpl, llm, none);
  auto r = mgr.play_episode(1, 0);
  ASSERT_TRUE(r && r->data->meta.contains("render"));
  const std::string text = r->data->meta["render"].get<std::string>();
  FrozenLake replay(FrozenLakeConfig::from_json(step_spec().env_config));
  const std::string start = replay.reset(300 + 1).observation;  // invalid actions keep the board
  EXPECT_EQ(text.rfind("FrozenLakeStep episode 1 (group 2, env 4), 2 turn(s), score -0.02", 0), 0u) << text;
  EXPECT_NE(text.find("== turn 1\n" + start + "\n-- response\n<answer>Jump</answer>\n-- reward -0.01"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("== turn 2\n" + start + "\n-- response\n<answer>Fly</answer>\n-- reward -0.01"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("== final\n" + start + "\n"), std::string::npos) << text;
}
