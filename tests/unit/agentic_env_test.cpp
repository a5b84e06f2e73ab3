// FrozenLake and Sokoban (docs/agentic.md) and ROLL's action parser.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <set>

#include "roll/agentic/action_parser.h"
#include "roll/agentic/env.h"
#include "roll/agentic/frozen_lake.h"
#include "roll/agentic/sokoban.h"
#include "roll/core/error.h"

using namespace roll;
using namespace roll::agentic;

namespace {

const char* kAnswer[] = {"", "Up", "Down", "Left", "Right"};

// Breadth-first Sokoban solver over (player, boxes) states; returns the action sequence (1..4).
std::vector<int> solve_sokoban(const Sokoban& env) {
  const auto& fixed = env.room_fixed();
  const int C = env.config().cols;
  const int dr[5] = {0, -1, 1, 0, 0}, dc[5] = {0, 0, 0, -1, 1};
  struct State {
    int player;
    std::vector<int> boxes;
    bool operator<(const State& o) const { return std::tie(player, boxes) < std::tie(o.player, o.boxes); }
  };
  State start;
  for (size_t i = 0; i < env.room_state().size(); ++i) {
    int v = env.room_state()[i];
    if (v == Sokoban::Player) start.player = static_cast<int>(i);
    if (v == Sokoban::Box || v == Sokoban::BoxOnTarget) start.boxes.push_back(static_cast<int>(i));
  }
  auto solved = [&](const State& s) {
    for (int b : s.boxes)
      if (fixed[b] != Sokoban::Target) return false;
    return true;
  };
  std::map<State, std::pair<State, int>> parent;
  std::deque<State> q{start};
  parent[start] = {start, 0};
  while (!q.empty() && parent.size() < 2000000) {
    State s = q.front();
    q.pop_front();
    if (solved(s)) {
      std::vector<int> path;
      while (!(s.player == start.player && s.boxes == start.boxes)) {
        auto [p, a] = parent[s];
        path.push_back(a);
        s = p;
      }
      return {path.rbegin(), path.rend()};
    }
    for (int a = 1; a <= 4; ++a) {
      int n = s.player + dr[a] * C + dc[a];
      if (fixed[n] == Sokoban::Wall) continue;
      State t = s;
      auto it = std::find(t.boxes.begin(), t.boxes.end(), n);
      if (it != t.boxes.end()) {
        int beyond = n + dr[a] * C + dc[a];
        if (fixed[beyond] == Sokoban::Wall || std::count(t.boxes.begin(), t.boxes.end(), beyond)) continue;
        *it = beyond;
        std::sort(t.boxes.begin(), t.boxes.end());
      }
      t.player = n;
      if (!parent.count(t)) {
        parent[t] = {s, a};
        q.push_back(t);
      }
    }
  }
  return {};
}

SokobanConfig sokoban_variant(int rows, int boxes, int depth) {
  SokobanConfig c;
  c.rows = c.cols = rows;
  c.num_boxes = boxes;
  c.search_depth = depth;
  c.max_steps = 10;
  c.format_penalty = -0.15;
  return c;
}

}  // namespace

TEST(AgenticEnvParser, PatternsAndSpecialTokens) {
  ActionParser p("<answer>(.*?)</answer>", {{0, "Left"}, {1, "Down"}});
  auto a = p.parse("<|im_start|>I think <answer> left </answer><|im_end|>");
  ASSERT_TRUE(a.action.has_value());
  EXPECT_EQ(*a.action, 0);
  EXPECT_EQ(a.action_content, "left");
  EXPECT_FALSE(p.parse("<answer>Jump</answer>").action.has_value());
  EXPECT_FALSE(p.parse("Left").action.has_value());
  EXPECT_EQ(*p.parse("<answer>Down</answer><answer>Left</answer>").action, 1);  // first match, like re.search
  EXPECT_EQ(*p.parse("<answer>\nDown\n</answer>").action, 1);                   // DOTALL
  ActionParser think("<think>(.*?)</think>\\s*<answer>(.*?)</answer>", {{2, "Right"}});
  auto t = think.parse("<think>go right</think>\n<answer>Right</answer>");
  EXPECT_EQ(*t.action, 2);
  EXPECT_EQ(t.think_content, "go right");
  EXPECT_FALSE(think.parse("<answer>Right</answer>").action.has_value());
  EXPECT_FALSE(p.parse(std::string("<answer>\xff\xfe</answer>")).action.has_value());  // invalid UTF-8: no crash
  EXPECT_THROW(ActionParser("(unclosed", {}), Error);
  EXPECT_THROW(ActionParser("no groups", {}), Error);
}

// ROLL's tests/agentic/env/test_frozen_lake.py.
TEST(AgenticEnvFrozenLake, RollVector) {
  FrozenLakeConfig c;
  c.size = 4;
  c.p = 0.8;
  c.is_slippery = false;
  FrozenLake env(c);
  auto r = env.reset(42);
  EXPECT_FALSE(r.observation.empty());
  EXPECT_NE(r.info["env_instruction"].get<std::string>().find("Your available actions are:\nLeft, Down, Right, Up"),
            std::string::npos);
  auto s = env.step("<answer>Left</answer>");
  EXPECT_FALSE(s.observation.empty());
  EXPECT_TRUE(s.info["metrics"]["action_is_valid"].get<bool>());
  EXPECT_TRUE(s.reward == 0.0 || s.reward == 1.0);
}

TEST(AgenticEnvFrozenLake, ThousandSeedsAreSolvableAndDeterministic) {
  for (int size : {4, 6}) {
    FrozenLakeConfig c;
    c.size = size;
    c.is_slippery = false;
    FrozenLake env(c), again(c);
    std::set<std::string> distinct;
    for (uint64_t seed = 0; seed < 1000; ++seed) {
      auto r = env.reset(seed);
      EXPECT_EQ(r.observation, again.reset(seed).observation) << seed;
      ASSERT_EQ(env.board().size(), static_cast<size_t>(size));
      auto path = FrozenLake::solve(env.board(), env.player_row(), env.player_col());
      ASSERT_FALSE(path.empty()) << "seed " << seed;
      distinct.insert(r.observation);
      for (size_t i = 0; i < path.size(); ++i) {
        auto s = env.step(std::string("<answer>") + (const char*[]){"Left", "Down", "Right", "Up"}[path[i]] +
                          "</answer>");
        const bool last = i + 1 == path.size();
        EXPECT_EQ(s.reward, last ? 1.0 : 0.0);
        EXPECT_EQ(s.terminated, last);
        if (last) EXPECT_TRUE(s.info["metrics"]["success"].get<bool>());
      }
    }
    EXPECT_GT(distinct.size(), 900u);
  }
}

TEST(AgenticEnvFrozenLake, RewardsPenaltiesAndRendering) {
  FrozenLakeConfig c;
  c.is_slippery = false;
  c.format_penalty = -0.01;
  FrozenLake env(c);
  env.reset(7);
  const std::string before = env.render();
  EXPECT_NE(before.find('P'), std::string::npos);
  EXPECT_NE(before.find('G'), std::string::npos);
  EXPECT_EQ(before.find('S'), std::string::npos);  // the start renders as floor
  auto invalid = env.step("<answer>Jump</answer>");
  EXPECT_DOUBLE_EQ(invalid.reward, -0.01);
  EXPECT_FALSE(invalid.terminated);
  EXPECT_FALSE(invalid.info["metrics"]["action_is_valid"].get<bool>());
  EXPECT_EQ(invalid.observation, before);
  auto malformed = env.step("I go left");
  EXPECT_DOUBLE_EQ(malformed.reward, -0.01);
  // Walking into a hole terminates with reward 0 and renders X.
  for (uint64_t seed = 0; seed < 200; ++seed) {
    env.reset(seed);
    const auto& b = env.board();
    const int r = env.player_row(), col = env.player_col(), n = static_cast<int>(b.size());
    const int dr[4] = {0, 1, 0, -1}, dc[4] = {-1, 0, 1, 0};
    for (int a = 0; a < 4; ++a) {
      int nr = r + dr[a], nc = col + dc[a];
      if (nr < 0 || nc < 0 || nr >= n || nc >= n || b[nr][nc] != 'H') continue;
      auto s = env.step_action(a);
      EXPECT_TRUE(s.terminated);
      EXPECT_EQ(s.reward, 0.0);
      EXPECT_NE(s.observation.find('X'), std::string::npos);
      EXPECT_FALSE(s.info["metrics"]["success"].get<bool>());
      return;
    }
  }
  FAIL() << "no start next to a hole in 200 seeds";
}

TEST(AgenticEnvFrozenLake, BordersBlockAndSlipperyIsSeeded) {
  FrozenLakeConfig c;
  c.is_slippery = false;
  FrozenLake env(c);
  for (uint64_t seed = 0; seed < 50; ++seed) {
    env.reset(seed);
    if (env.player_col() != 0) continue;
    auto s = env.step_action(FrozenLake::Left);
    EXPECT_FALSE(s.info["metrics"]["action_is_effective"].get<bool>());
    EXPECT_NE(s.info["action_desc"].get<std::string>().find("not effective"), std::string::npos);
    break;
  }
  c.is_slippery = true;
  FrozenLake a(c), b(c);
  a.reset(3);
  b.reset(3);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(a.step_action(i % 4).observation, b.step_action(i % 4).observation);
}

TEST(AgenticEnvSokoban, ThousandSeedsPerVariantAreSolvable) {
  struct V {
    int size, boxes, depth;
  };
  for (V v : {V{6, 1, 300}, V{10, 2, 10}, V{6, 1, 30}}) {
    Sokoban env(sokoban_variant(v.size, v.boxes, v.depth));
    for (uint64_t seed = 0; seed < 1000; ++seed) {
      env.reset(seed);
      int boxes = 0, targets = 0;
      for (size_t i = 0; i < env.room_state().size(); ++i) {
        boxes += env.room_state()[i] == Sokoban::Box || env.room_state()[i] == Sokoban::BoxOnTarget;
        targets += env.room_fixed()[i] == Sokoban::Target;
      }
      ASSERT_EQ(boxes, v.boxes) << seed;
      ASSERT_EQ(targets, v.boxes) << seed;
      EXPECT_FALSE(env.success()) << seed;  // reverse play moved every box off its target
      EXPECT_FALSE(solve_sokoban(env).empty()) << "unsolvable: size " << v.size << " seed " << seed;
    }
  }
}

TEST(AgenticEnvSokoban, ScriptedSolutionGivesDocumentedRewards) {
  Sokoban env(sokoban_variant(6, 1, 300));
  env.reset(5);
  auto path = solve_sokoban(env);
  ASSERT_FALSE(path.empty());
  double total = 0;
  for (size_t i = 0; i < path.size(); ++i) {
    const int before = env.boxes_on_target();
    auto s = env.step(std::string("<answer>") + kAnswer[path[i]] + "</answer>");
    total += s.reward;
    double expected = -0.1;
    if (env.boxes_on_target() > before) expected += 1.0;
    if (env.boxes_on_target() < before) expected -= 1.0;
    if (env.success()) expected += 10.0;
    EXPECT_NEAR(s.reward, expected, 1e-12) << i;
    EXPECT_EQ(s.terminated, i + 1 == path.size() || i + 1 >= 10);
    if (s.terminated) break;
  }
  if (path.size() <= 10) EXPECT_TRUE(env.success());
}

TEST(AgenticEnvSokoban, InvalidActionOnlyPaysTheFormatPenalty) {
  Sokoban env(sokoban_variant(6, 1, 300));
  auto r = env.reset(1);
  auto s = env.step("<answer>Jump</answer>");
  EXPECT_DOUBLE_EQ(s.reward, -0.15);
  EXPECT_EQ(s.observation, r.observation);
  EXPECT_FALSE(s.terminated);
  EXPECT_FALSE(s.info["metrics"]["action_is_valid"].get<bool>());
  // Ten invalid actions never end the episode by themselves (the env manager's turn limit does).
  for (int i = 0; i < 12; ++i) EXPECT_FALSE(env.step("nothing").terminated);
}

TEST(AgenticEnvSokoban, VocabularyOverridesAndFactory) {
  nlohmann::ordered_json cfg = {{"dim_room", {6, 6}},
                        {"num_boxes", 1},
                        {"search_depth", 30},
                        {"grid_lookup", {{"0", "W"}, {"1", "."}, {"2", "G"}, {"3", "C"}, {"4", "B"}, {"5", "A"}, {"6", "@"}}},
                        {"grid_vocab", {{"W", "wall"}, {"B", "box"}}}};
  auto env = make_env("sokoban", cfg);
  auto r = env->reset(0);
  EXPECT_NE(r.observation.find('W'), std::string::npos);
  EXPECT_NE(r.observation.find('A') != std::string::npos || r.observation.find('@') != std::string::npos, false);
  EXPECT_NE(env->instructions().find("W: wall, B: box"), std::string::npos);
  EXPECT_THROW(make_env("webshop", {}), NotSupportedError);
  EXPECT_THROW(make_env("sokoban", {{"dim_room", {2}}}), Error);
  EXPECT_THROW(make_env("frozen_lake", {{"size", "big"}}), Error);
}
