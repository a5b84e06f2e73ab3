#pragma once
// Sokoban (docs/agentic.md; the rules of gym-sokoban): push every box onto a target. Levels come from
// ROLL's generator: a random-walk room, boxes placed on targets, then "reverse play" (pulling boxes
// off their targets) so every level is solvable by construction.
#include <map>
#include <string>
#include <vector>

#include "roll/agentic/action_parser.h"
#include "roll/agentic/env.h"
#include "roll/core/rng.h"

namespace roll::agentic {

struct SokobanConfig {
  int rows = 10, cols = 10;  // dim_room
  int num_boxes = 4;
  int search_depth = 300;
  int max_steps = 20;
  double format_penalty = 0.0;
  std::string action_pattern = "<answer>(.*?)</answer>";
  std::map<int, std::string> grid_lookup{{0, "#"}, {1, "_"}, {2, "O"}, {3, "√"}, {4, "X"}, {5, "P"}, {6, "S"}};
  std::vector<std::pair<std::string, std::string>> grid_vocab{{"#", "wall"}, {"_", "empty"},        {"O", "target"},
                                                              {"√", "box on target"}, {"X", "box"}, {"P", "player"},
                                                              {"S", "player on target"}};
  std::string env_instruction =
      "You are solving the Sokoban puzzle. You are the player and you need to push all boxes to targets. When you "
      "are right next to a box, you can push it by moving in the same direction. You cannot push a box through a "
      "wall, and you cannot pull a box. The answer must be one of action in a turn, format is <answer>Right</answer>.";

  // env_config keys (ordered, so grid_vocab keeps its YAML order); errors name the key.
  static SokobanConfig from_json(const nlohmann::ordered_json& j);
};

class Sokoban : public Env {
 public:
  // Cell codes of gym-sokoban; 6 (player on target) exists only when rendering.
  enum Cell { Wall = 0, Floor = 1, Target = 2, BoxOnTarget = 3, Box = 4, Player = 5 };
  enum Action { Up = 1, Down = 2, Left = 3, Right = 4 };
  explicit Sokoban(SokobanConfig config);

  EnvReset reset(uint64_t seed) override;
  EnvStep step(const std::string& response) override;
  std::string render() const override;
  std::string instructions() const override;
  const std::string& action_pattern() const override { return config_.action_pattern; }

  EnvStep step_action(int action, const std::string& action_content = "", const std::string& think = "");
  int boxes_on_target() const { return boxes_on_target_; }
  bool success() const { return boxes_on_target_ == config_.num_boxes; }
  // room_fixed (walls/floor/targets) and room_state (with boxes and player), row-major.
  const std::vector<int>& room_fixed() const { return fixed_; }
  const std::vector<int>& room_state() const { return state_; }
  const SokobanConfig& config() const { return config_; }

 private:
  int count_boxes_on_target() const;
  bool generate(SeededRng& rng);

  SokobanConfig config_;
  ActionParser parser_;
  std::vector<int> fixed_, state_;
  int player_ = 0;  // row * cols + col
  int steps_ = 0;
  int boxes_on_target_ = 0;
};

}  // namespace roll::agentic
