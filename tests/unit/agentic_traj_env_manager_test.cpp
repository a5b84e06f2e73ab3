// TrajEnvManager: a real multi-turn rollout with a scripted LLM (docs/agentic.md token layout and masks).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "agentic_test_util.h"
#include "roll/agentic/frozen_lake.h"
#include "roll/agentic/traj_env_manager.h"
#include "roll/core/batch.h"
#include "roll/model/chat_template.h"
#include "roll/model/model_init.h"
#include "roll/model/tokenizer.h"

using namespace roll;
using namespace roll::agentic;
namespace fs = std::filesystem;

namespace {

using roll::testing::NoEpisodes;
using roll::testing::ScriptedLlm;

EnvSpec frozen_lake_spec() {
  EnvSpec s;
  s.tag = "FrozenLake";
  s.env_type = "frozen_lake";
  s.env_config = {{"is_slippery", false}, {"format_penalty", -0.01}};
  s.max_steps = 3;
  s.max_tokens_per_step = 64;
  s.agent_system_template = "You're a helpful assistant.";
  s.agent_template = "Turn {turn_idx}:\nObservation:\n{observation}\nYou have {actions_left} actions left.\n";
  return s;
}

}  // namespace

TEST(AgenticTrajEnvManager, ThreeTurnTokenLayoutAndMasks) {
  const std::string dir = model::default_tokenizer_dir();
  if (!fs::exists(dir + "/tokenizer.json")) GTEST_SKIP() << "run scripts/setup for the tokenizer";
  auto tok = model::Tokenizer::from_dir(dir);
  auto tmpl = model::ChatTemplate::from_model_dir("qwen2_5", dir);
  // Invalid actions never end a FrozenLake episode, so all 3 turns are played.
  ScriptedLlm llm(tok, {"<answer>Jump</answer>", "<answer>Fly</answer>", "<answer>Swim</answer>"});
  NoEpisodes none;
  EnvManagerOptions o;
  o.spec = frozen_lake_spec();
  o.group_id = 2;
  o.env_id = 5;
  o.group_seed = 100;
  o.sequence_length = 1024;
  o.generation.max_new_tokens = 100;  // generating_args; max_tokens_per_step (64) is smaller
  TrajEnvManager mgr(o, tok, tmpl, llm, none);
  auto r = mgr.play_episode(7, 0);
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(llm.requests.size(), 3u);
  const Batch& b = *r->data;
  const auto end_tok = *tok.token_to_id("<|im_end|>");
  // Each request is the previous request + previous response + end token + this turn's prompt.
  std::vector<int64_t> expected;
  std::vector<int64_t> expected_resp;
  for (size_t t = 0; t < 3; ++t) {
    const auto& in = llm.requests[t].input_ids;
    if (t > 0) {
      const auto& prev = llm.requests[t - 1].input_ids;
      ASSERT_GT(in.size(), prev.size());
      EXPECT_TRUE(std::equal(prev.begin(), prev.end(), in.begin())) << "turn " << t << " does not extend history";
    }
    for (size_t k = expected.size(); k < in.size(); ++k) {
      expected.push_back(in[k]);
      expected_resp.push_back(0);
    }
    auto reply = tok.encode(std::vector<std::string>{"<answer>Jump</answer>", "<answer>Fly</answer>",
                                                     "<answer>Swim</answer>"}[t],
                            false);
    for (auto id : reply) {
      expected.push_back(id);
      expected_resp.push_back(1);
    }
  }
  // The second and third prompts start with the conversation-end token.
  const size_t p2 = llm.requests[0].input_ids.size() + tok.encode("<answer>Jump</answer>", false).size();
  EXPECT_EQ(expected[p2], end_tok);
  const int64_t L = static_cast<int64_t>(expected.size());
  at::Tensor ids = b.tensor("input_ids")[0];
  for (int64_t i = 0; i < L; ++i) {
    ASSERT_EQ(ids[i].item<int64_t>(), expected[i]) << i;
    ASSERT_EQ(b.tensor("response_mask")[0][i].item<int64_t>(), expected_resp[i]) << i;
    ASSERT_EQ(b.tensor("attention_mask")[0][i].item<int64_t>(), 1);
    ASSERT_EQ(b.tensor("position_ids")[0][i].item<int64_t>(), i);
  }
  // prompt_mask covers the first prompt only; padding after the last token.
  const int64_t first_resp = static_cast<int64_t>(llm.requests[0].input_ids.size());
  EXPECT_EQ(b.tensor("prompt_mask").sum().item<int64_t>(), first_resp);
  EXPECT_EQ(b.tensor("attention_mask").sum().item<int64_t>(), L);
  // scores: the episode score at the last real token; 3 invalid actions x -0.01 (fp32 storage: ≤ 2e-9).
  EXPECT_NEAR(b.tensor("scores")[0][L - 1].item<float>(), -0.03, 1e-6);
  EXPECT_NEAR(b.tensor("scores").sum().item<float>(), -0.03, 1e-6);
  // infer_logprobs are aligned to predicting token t+1: response token i sits at i-1.
  EXPECT_NEAR(b.tensor("infer_logprobs")[0][first_resp - 1].item<float>(), -0.5, 1e-6);
  EXPECT_EQ(b.tensor("infer_logprobs").size(1), 1023);
  EXPECT_EQ(b.column("traj_group_id")[0].get<std::string>(), "FrozenLake_2_7_100");
  EXPECT_EQ(b.column("traj_id")[0].get<std::string>(), "FrozenLake_2_7_100_5");
  EXPECT_EQ(b.column("step_scores")[0].size(), 3u);
  EXPECT_DOUBLE_EQ(b.meta["metrics"]["env/FrozenLake/action_is_valid"][0].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(b.meta["metrics"]["env/FrozenLake/num_actions"][0].get<double>(), 3.0);
  // Per-turn max_new_tokens = min(max_tokens_per_step, generating max_new_tokens, room left).
  EXPECT_EQ(llm.requests[0].params.max_new_tokens, 64);
  EXPECT_EQ(llm.requests[0].src_rank, 5);
}

TEST(AgenticTrajEnvManager, SolvingEndsTheEpisodeWithReward) {
  const std::string dir = model::default_tokenizer_dir();
  if (!fs::exists(dir + "/tokenizer.json")) GTEST_SKIP() << "run scripts/setup for the tokenizer";
  auto tok = model::Tokenizer::from_dir(dir);
  auto tmpl = model::ChatTemplate::from_model_dir("qwen2_5", dir);
  // Find the optimal path of the episode's map, then script it.
  EnvSpec spec = frozen_lake_spec();
  spec.max_steps = 10;
  FrozenLake probe(FrozenLakeConfig::from_json(spec.env_config));
  probe.reset(100 + 3);
  auto path = FrozenLake::solve(probe.board(), probe.player_row(), probe.player_col());
  ASSERT_FALSE(path.empty());
  std::vector<std::string> replies;
  for (int a : path) replies.push_back(roll::testing::frozen_lake_answer(a));
  ScriptedLlm llm(tok, replies);
  NoEpisodes none;
  EnvManagerOptions o;
  o.spec = spec;
  o.group_seed = 100;
  o.sequence_length = 4096;
  TrajEnvManager mgr(o, tok, tmpl, llm, none);
  auto r = mgr.play_episode(3, 0);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(llm.requests.size(), path.size());
  EXPECT_DOUBLE_EQ(r->data->column("episode_scores")[0].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(r->data->meta["metrics"]["env/FrozenLake/success"][0].get<double>(), 1.0);
}
