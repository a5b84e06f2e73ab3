// The BFS expert and its SFT conversations (datagen/expert_policy.h, expert_data.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "roll/agentic/env.h"
#include "roll/datagen/expert_data.h"
#include "roll/datagen/expert_policy.h"
#include "roll/agentic/frozen_lake.h"
#include "roll/core/error.h"

namespace roll::agentic {
namespace {

EnvSpec spec_of(const std::string& type, nlohmann::ordered_json env_config, int64_t max_steps) {
  EnvSpec s;
  s.tag = type == "frozen_lake" ? "FrozenLake" : "SimpleSokoban";
  s.env_type = type;
  s.env_config = std::move(env_config);
  s.max_steps = max_steps;
  s.agent_system_template = "You play.";
  s.agent_template = "Turn {turn_idx}:\n{observation}\n{actions_left} left\n";
  return s;
}

// Where the player and the goal are on the rendered FrozenLake board.
std::pair<int, int> find(const std::string& render, const std::string& what) {
  int row = 0, col = 0;
  for (size_t i = 0; i < render.size();) {
    if (render[i] == '\n') {
      ++row, col = 0, ++i;
      continue;
    }
    if (render.compare(i, what.size(), what) == 0) return {row, col};
    i += (static_cast<unsigned char>(render[i]) >= 0x80) ? 3 : 1;  // "√" is 3 bytes
    ++col;
  }
  return {-1, -1};
}

TEST(AgenticExpert, FrozenLakeNoiselessExpertAlwaysReachesTheGoalOnAShortestPath) {
  const EnvSpec spec = spec_of("frozen_lake", {{"is_slippery", false}, {"max_steps", 40}}, 40);
  ExpertDataOptions o;
  o.seed = 3, o.n = 300;
  const auto rows = expert_conversations(spec, o);
  ASSERT_EQ(rows.size(), 300u);
  const std::regex answer("<answer>(Left|Down|Right|Up)</answer>");
  for (const auto& r : rows) {
    EXPECT_TRUE(r["success"].get<bool>()) << r.dump();
    EXPECT_EQ(r["random_actions"].get<int>(), 0);
    const auto& m = r["messages"];
    // system, user, assistant, then user/assistant pairs.
    ASSERT_EQ(m.size(), 1 + 2 * r["turns"].get<size_t>());
    EXPECT_EQ(m[0]["role"], "system");
    for (size_t i = 1; i < m.size(); ++i) {
      EXPECT_EQ(m[i]["role"], i % 2 ? "user" : "assistant");
      if (i % 2 == 0) EXPECT_TRUE(std::regex_match(m[i]["content"].get<std::string>(), answer));
    }
    // A shortest path is at least the Manhattan distance from P to G (read off the first board).
    FrozenLake env(FrozenLakeConfig::from_json({{"is_slippery", false}}));
    const std::string board = env.reset(r["episode_seed"].get<uint64_t>()).observation;
    const auto [pr, pc] = find(board, "P");
    const auto [gr, gc] = find(board, "G");
    ASSERT_GE(pr, 0);
    ASSERT_GE(gr, 0);
    EXPECT_GE(r["turns"].get<int>(), std::abs(pr - gr) + std::abs(pc - gc));
    EXPECT_NE(m[1]["content"].get<std::string>().find(board), std::string::npos);
  }
}

TEST(AgenticExpert, SokobanNoiselessExpertSolvesGeneratedLevels) {
  const EnvSpec spec = spec_of("sokoban", {{"dim_room", {6, 6}}, {"num_boxes", 1}, {"max_steps", 200}}, 200);
  ExpertDataOptions o;
  o.seed = 5, o.n = 40;
  for (const auto& r : expert_conversations(spec, o)) {
    EXPECT_TRUE(r["success"].get<bool>()) << r["episode_seed"];
    EXPECT_EQ(r["random_actions"].get<int>(), 0);
  }
}

TEST(AgenticExpert, NoiseMixesInRandomActionsAndSeedsAreDeterministic) {
  const EnvSpec spec = spec_of("frozen_lake", {{"is_slippery", false}, {"max_steps", 8}}, 8);
  ExpertDataOptions o;
  o.seed = 1, o.n = 200, o.noise = 1.0;
  int64_t solved = 0;
  for (const auto& r : expert_conversations(spec, o)) {
    EXPECT_EQ(r["random_actions"], r["turns"]);
    solved += r["success"].get<bool>();
  }
  EXPECT_LT(solved, 100);  // a random walker fails most maps
  o.noise = 0.3;
  const auto a = expert_conversations(spec, o), b = expert_conversations(spec, o);
  EXPECT_EQ(nlohmann::ordered_json(a).dump(), nlohmann::ordered_json(b).dump());
  o.seed = 2;
  EXPECT_NE(nlohmann::ordered_json(expert_conversations(spec, o)).dump(), nlohmann::ordered_json(a).dump());
  int64_t random = 0, turns = 0;
  for (const auto& r : a) random += r["random_actions"].get<int64_t>(), turns += r["turns"].get<int64_t>();
  EXPECT_NEAR(static_cast<double>(random) / turns, 0.3, 0.06);
}

// StepEnvManager specs: one single-turn conversation per decision, as StepEnvManager prompts it;
// replaying a row's answers from its episode seed gives the next row's board.
TEST(AgenticExpert, StepEnvManagerSpecsGiveOneConversationPerTurn) {
  EnvSpec spec = spec_of("frozen_lake", {{"is_slippery", false}, {"max_steps", 8}}, 8);
  spec.env_manager_cls = "roll.pipeline.agentic.env_manager.step_env_manager.StepEnvManager";
  spec.history_length = 2;
  spec.agent_template = "State {current_step}:\n{current_observation}\nBefore: [{history}]\n";
  ExpertDataOptions o;
  o.seed = 4, o.n = 30, o.noise = 0.2;
  const auto rows = expert_conversations(spec, o);
  ASSERT_GT(rows.size(), 30u);
  const std::regex answer("<answer>(Left|Down|Right|Up)</answer>");
  FrozenLake env(FrozenLakeConfig::from_json({{"is_slippery", false}}));
  std::string board, previous;
  int64_t episodes = 0, random = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const auto& m = r["messages"];
    ASSERT_EQ(m.size(), 3u) << r.dump();
    EXPECT_EQ(m[0]["role"], "system");
    EXPECT_EQ(m[1]["role"], "user");
    const std::string reply = m[2]["content"].get<std::string>();
    EXPECT_TRUE(std::regex_match(reply, answer)) << reply;
    const int64_t step = r["step"].get<int64_t>();
    if (step == 0) {
      board = env.reset(r["episode_seed"].get<uint64_t>()).observation;
      ++episodes;
      EXPECT_NE(m[1]["content"].get<std::string>().find("Before: []"), std::string::npos);
    } else {
      EXPECT_EQ(r["episode_seed"], rows[i - 1]["episode_seed"]);
      EXPECT_EQ(step, rows[i - 1]["step"].get<int64_t>() + 1);
      // history_length 2 shows the one turn before: its board and its action.
      const std::string shown = "(step: " + std::to_string(step) + ", observation: " + previous + ", action: ";
      EXPECT_NE(m[1]["content"].get<std::string>().find(shown), std::string::npos) << m[1]["content"];
    }
    const std::string user = m[1]["content"].get<std::string>();
    EXPECT_EQ(user.rfind("State " + std::to_string(step + 1) + ":\n" + board + "\n", 0), 0u) << user;
    random += r["random_action"].get<bool>();
    previous = board;
    board = env.step(reply).observation;
  }
  EXPECT_EQ(episodes, 30);
  EXPECT_GT(random, 0);
}

// The answer is the action written into the env's action_pattern, so SFT rows parse under the
// pattern the RL run uses (ROLL's traj_envs patterns).
TEST(AgenticExpert, AnswersFollowTheEnvActionPattern) {
  EXPECT_EQ(expert_answer("<answer>(.*?)</answer>", "Up"), "<answer>Up</answer>");
  EXPECT_EQ(expert_answer("^(.*)$", "Left"), "Left");
  EXPECT_EQ(expert_answer("<think>(.*?)</think>\\s*<answer>(.*?)</answer>", "Down"),
            "<think></think><answer>Down</answer>");
  EXPECT_THROW(expert_answer("<answer>[A-Za-z]+</answer>", "Up"), Error);

  EnvSpec spec = spec_of("frozen_lake", {{"is_slippery", false}, {"max_steps", 8}, {"action_pattern", "^(.*)$"}}, 8);
  spec.env_manager_cls = "roll.pipeline.agentic.env_manager.step_env_manager.StepEnvManager";
  ExpertDataOptions o;
  o.seed = 6, o.n = 20;
  const std::regex bare("Left|Down|Right|Up");
  int64_t solved = 0;
  for (const auto& r : expert_conversations(spec, o)) {
    EXPECT_TRUE(std::regex_match(r["messages"][2]["content"].get<std::string>(), bare)) << r.dump();
    solved += r["success"].get<bool>() && r["step"].get<int64_t>() + 1 == r["turns"].get<int64_t>();
  }
  EXPECT_EQ(solved, 20);  // the bare answers moved the player: every noiseless episode reached the goal

  // A pattern whose written answer the env does not parse back is an error naming the pattern.
  spec.env_config["action_pattern"] = "<a>(.*?)</a>\\d";
  try {
    expert_conversations(spec, o);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("<a>(.*?)</a>\\d"), std::string::npos) << e.what();
  }
}

TEST(AgenticExpert, BadNoiseAndEnvWithoutExpertAreErrors) {
  ExpertDataOptions o;
  o.noise = 1.5;
  EXPECT_THROW(expert_conversations(spec_of("frozen_lake", {}, 4), o), Error);
  o.noise = 0;
  EXPECT_THROW(expert_conversations(spec_of("webshop", {}, 4), o), Error);
}

}  // namespace
}  // namespace roll::agentic
