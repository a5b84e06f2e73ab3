#include "roll/datagen/expert_policy.h"

#include <deque>
#include <unordered_map>

#include "roll/agentic/frozen_lake.h"
#include "roll/agentic/sokoban.h"

namespace roll::agentic {
namespace {

const char* kFrozenLakeNames[4] = {"Left", "Down", "Right", "Up"};  // FrozenLake::Action order
const char* kSokobanNames[4] = {"Up", "Down", "Left", "Right"};     // Sokoban::Action - 1
const int kSokobanDr[4] = {-1, 1, 0, 0};
const int kSokobanDc[4] = {0, 0, -1, 1};

std::optional<std::string> frozen_lake_action(const FrozenLake& env) {
  const auto path = FrozenLake::solve(env.board(), env.player_row(), env.player_col());
  if (path.empty()) return std::nullopt;
  return kFrozenLakeNames[path.front()];
}

void set_player(std::string& key, int cell) {
  key[0] = static_cast<char>(cell & 0xff);
  key[1] = static_cast<char>(cell >> 8);
}
int player_of(const std::string& key) {
  return static_cast<unsigned char>(key[0]) | (static_cast<unsigned char>(key[1]) << 8);
}

// BFS over states "player cell + sorted box cells"; pushes only into floor or target cells.
std::optional<std::string> sokoban_action(const Sokoban& env, size_t max_states) {
  const int rows = env.config().rows, cols = env.config().cols;
  const auto& fixed = env.room_fixed();
  const auto& state = env.room_state();
  std::string start(2 + rows * cols, '\0');  // player (2 bytes), then one box flag per cell
  int player = -1;
  for (int i = 0; i < rows * cols; ++i) {
    if (state[i] == Sokoban::Player) player = i;
    start[2 + i] = (state[i] == Sokoban::Box || state[i] == Sokoban::BoxOnTarget) ? 1 : 0;
  }
  if (player < 0) return std::nullopt;
  set_player(start, player);
  auto solved = [&](const std::string& s) {
    for (int i = 0; i < rows * cols; ++i)
      if (s[2 + i] && fixed[i] != Sokoban::Target) return false;
    return true;
  };
  if (solved(start)) return std::nullopt;
  std::unordered_map<std::string, int> first_action{{start, -1}};
  std::deque<std::string> queue{start};
  while (!queue.empty() && first_action.size() < max_states) {
    const std::string cur = std::move(queue.front());
    queue.pop_front();
    const int p = player_of(cur);
    for (int d = 0; d < 4; ++d) {
      const int r = p / cols + kSokobanDr[d], c = p % cols + kSokobanDc[d];
      if (r < 0 || c < 0 || r >= rows || c >= cols || fixed[r * cols + c] == Sokoban::Wall) continue;
      std::string next = cur;
      const int cell = r * cols + c;
      if (cur[2 + cell]) {  // push the box one further
        const int br = r + kSokobanDr[d], bc = c + kSokobanDc[d];
        if (br < 0 || bc < 0 || br >= rows || bc >= cols) continue;
        const int to = br * cols + bc;
        if (fixed[to] == Sokoban::Wall || cur[2 + to]) continue;
        next[2 + cell] = 0;
        next[2 + to] = 1;
      }
      set_player(next, cell);
      if (first_action.count(next)) continue;
      const int a = cur == start ? d : first_action[cur];
      if (solved(next)) return kSokobanNames[a];
      first_action.emplace(next, a);
      queue.push_back(std::move(next));
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> expert_action(const Env& env, size_t max_states) {
  if (const auto* f = dynamic_cast<const FrozenLake*>(&env)) return frozen_lake_action(*f);
  if (const auto* s = dynamic_cast<const Sokoban*>(&env)) return sokoban_action(*s, max_states);
  return std::nullopt;
}

std::vector<std::string> action_names(const Env& env) {
  if (dynamic_cast<const FrozenLake*>(&env)) return {kFrozenLakeNames, kFrozenLakeNames + 4};
  if (dynamic_cast<const Sokoban*>(&env)) return {kSokobanNames, kSokobanNames + 4};
  return {};
}

}  // namespace roll::agentic
