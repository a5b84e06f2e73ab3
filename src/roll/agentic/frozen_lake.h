#pragma once
// FrozenLake (docs/agentic.md): a size x size grid of frozen cells and holes, a start and a goal; a
// solvable map is drawn from each episode seed.
#include <map>
#include <string>
#include <vector>

#include "roll/agentic/action_parser.h"
#include "roll/agentic/env.h"
#include "roll/core/rng.h"

namespace roll::agentic {

struct FrozenLakeConfig {
  int size = 4;
  double p = 0.8;  // probability that a cell is frozen
  bool is_slippery = true;
  int max_steps = 20;
  double format_penalty = 0.0;
  std::string action_pattern = "<answer>(.*?)</answer>";
  std::string env_instruction =
      "You are solving the FrozenLake puzzle. Forbid the whole and go to the target. You may move to the unintended "
      "direction due to the slippery ice. The answer must be one of action in a turn, format is <answer>Right</answer>";
  std::map<char, std::string> grid_lookup;  // overrides of the rendering symbols (by cell kind), optional

  static FrozenLakeConfig from_json(const nlohmann::ordered_json& j);  // env_config keys; errors name the key
};

class FrozenLake : public Env {
 public:
  enum Action { Left = 0, Down = 1, Right = 2, Up = 3 };
  explicit FrozenLake(FrozenLakeConfig config);

  EnvReset reset(uint64_t seed) override;
  EnvStep step(const std::string& response) override;
  std::string render() const override;
  std::string instructions() const override;
  const std::string& action_pattern() const override { return config_.action_pattern; }

  // For tests and expert data: the board rows ('S', 'F', 'H', 'G'), the player cell.
  const std::vector<std::string>& board() const { return board_; }
  int player_row() const { return row_; }
  int player_col() const { return col_; }
  bool success() const { return board_[row_][col_] == 'G'; }
  // Applies an action id directly (the parsed path of step()).
  EnvStep step_action(int action, const std::string& action_content = "", const std::string& think = "");

  // Shortest action sequence from the player to the goal avoiding holes (empty if none).
  static std::vector<int> solve(const std::vector<std::string>& board, int row, int col);

 private:
  FrozenLakeConfig config_;
  ActionParser parser_;
  std::vector<std::string> board_;
  int row_ = 0, col_ = 0;
  int steps_ = 0;
  uint64_t slip_state_ = 0;  // per-episode stream for slippery moves
};

}  // namespace roll::agentic
