#include "roll/agentic/frozen_lake.h"

#include <fmt/format.h>

#include <deque>

#include "roll/core/error.h"

namespace roll::agentic {
namespace {

const int kDr[4] = {0, 1, 0, -1};  // Left, Down, Right, Up
const int kDc[4] = {-1, 0, 1, 0};
const char* kActionNames[4] = {"Left", "Down", "Right", "Up"};

bool path_exists(const std::vector<std::string>& b, int sr, int sc) {
  const int n = static_cast<int>(b.size());
  std::vector<std::vector<bool>> seen(n, std::vector<bool>(n, false));
  std::vector<std::pair<int, int>> stack{{sr, sc}};
  seen[sr][sc] = true;
  while (!stack.empty()) {
    auto [r, c] = stack.back();
    stack.pop_back();
    if (b[r][c] == 'G') return true;
    for (int a = 0; a < 4; ++a) {
      int nr = r + kDr[a], nc = c + kDc[a];
      if (nr < 0 || nc < 0 || nr >= n || nc >= n || seen[nr][nc] || b[nr][nc] == 'H') continue;
      seen[nr][nc] = true;
      stack.emplace_back(nr, nc);
    }
  }
  return false;
}

}  // namespace

FrozenLakeConfig FrozenLakeConfig::from_json(const nlohmann::ordered_json& j) {
  FrozenLakeConfig c;
  auto get = [&](const char* key, auto& out) {
    if (!j.contains(key) || j[key].is_null()) return;
    try {
      out = j[key].get<std::decay_t<decltype(out)>>();
    } catch (const std::exception&) {
      throw Error(fmt::format("frozen_lake env_config key '{}' has the wrong type: {}", key, j[key].dump()));
    }
  };
  get("size", c.size);
  get("p", c.p);
  get("is_slippery", c.is_slippery);
  get("max_steps", c.max_steps);
  get("format_penalty", c.format_penalty);
  get("action_pattern", c.action_pattern);
  get("env_instruction", c.env_instruction);
  if (c.size < 2 || c.size > 64) throw Error(fmt::format("frozen_lake env_config size {} must be in [2, 64]", c.size));
  if (!(c.p > 0.0 && c.p <= 1.0)) throw Error(fmt::format("frozen_lake env_config p {} must be in (0, 1]", c.p));
  return c;
}

FrozenLake::FrozenLake(FrozenLakeConfig config)
    : config_(std::move(config)),
      parser_(config_.action_pattern, {{Left, "Left"}, {Down, "Down"}, {Right, "Right"}, {Up, "Up"}}) {}

EnvReset FrozenLake::reset(uint64_t seed) {
  SeededRng rng(seed);
  const int n = config_.size;
  // Resample until a path from S to G avoids every hole (docs/agentic.md).
  for (;;) {
    board_.assign(n, std::string(n, 'F'));
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < n; ++c)
        if (rng.uniform() >= config_.p) board_[r][c] = 'H';
    const int cells = n * n;
    const int s = static_cast<int>(rng.below(cells));
    int g = static_cast<int>(rng.below(cells - 1));
    if (g >= s) ++g;
    board_[s / n][s % n] = 'S';
    board_[g / n][g % n] = 'G';
    if (path_exists(board_, s / n, s % n)) {
      row_ = s / n;
      col_ = s % n;
      break;
    }
  }
  steps_ = 0;
  slip_state_ = seed * 0x2545F4914F6CDD1Dull + 1;
  return {render(), nlohmann::json{{"env_instruction", instructions()}}};
}

std::string FrozenLake::instructions() const {
  return config_.env_instruction +
         "\nThe meaning of each symbol in the state is:\nP: player, _: empty, O: hole, G: goal, X: player in hole, "
         "√: player on goal\nYour available actions are:\nLeft, Down, Right, Up";
}

std::string FrozenLake::render() const {
  std::string out;
  for (int r = 0; r < static_cast<int>(board_.size()); ++r) {
    if (r) out += "\n";
    for (int c = 0; c < static_cast<int>(board_.size()); ++c) {
      const char cell = board_[r][c];
      const bool here = r == row_ && c == col_;
      if (here) out += cell == 'H' ? "X" : cell == 'G' ? "√" : "P";
      else out += cell == 'H' ? "O" : cell == 'G' ? "G" : "_";  // S renders as floor
    }
  }
  return out;
}

EnvStep FrozenLake::step(const std::string& response) {
  ParsedAction a = parser_.parse(response);
  if (!a.action) {
    // Invalid or malformed: no move, the format penalty as reward, not terminated.
    EnvStep s;
    s.observation = render();
    s.reward = config_.format_penalty;
    s.info = step_info(false, false, success(), config_.format_penalty, action_description(steps_ + 1, "", false),
                       a.action_content, a.think_content);
    ++steps_;
    return s;
  }
  return step_action(*a.action, a.action_content, a.think_content);
}

EnvStep FrozenLake::step_action(int action, const std::string& action_content, const std::string& think) {
  if (action < 0 || action > 3) throw Error(fmt::format("FrozenLake action {} is not 0..3", action));
  const int n = config_.size;
  int move = action;
  if (config_.is_slippery) {
    // Intended direction or one of the two perpendicular ones, each with probability 1/3.
    slip_state_ = slip_state_ * 6364136223846793005ull + 1442695040888963407ull;
    const int k = static_cast<int>((slip_state_ >> 33) % 3);
    move = (action + 3 + k) % 4;  // action-1, action, action+1
  }
  const int before_r = row_, before_c = col_;
  const int nr = row_ + kDr[move], nc = col_ + kDc[move];
  if (nr >= 0 && nc >= 0 && nr < n && nc < n) {
    row_ = nr;
    col_ = nc;
  }
  ++steps_;
  const char cell = board_[row_][col_];
  const bool on_goal = cell == 'G';
  EnvStep s;
  s.reward = on_goal ? 1.0 : 0.0;
  s.terminated = on_goal || cell == 'H';
  s.truncated = s.terminated && !on_goal && steps_ >= config_.max_steps;
  s.observation = render();
  const bool effective = before_r != row_ || before_c != col_;
  s.info = step_info(effective, true, on_goal, 0.0, action_description(steps_, kActionNames[action], effective),
                     action_content, think);
  return s;
}

std::vector<int> FrozenLake::solve(const std::vector<std::string>& b, int sr, int sc) {
  const int n = static_cast<int>(b.size());
  std::vector<int> prev(n * n, -1), how(n * n, -1);
  std::deque<int> q{sr * n + sc};
  prev[sr * n + sc] = sr * n + sc;
  while (!q.empty()) {
    int cur = q.front();
    q.pop_front();
    int r = cur / n, c = cur % n;
    if (b[r][c] == 'G') {
      std::vector<int> path;
      while (cur != sr * n + sc) {
        path.push_back(how[cur]);
        cur = prev[cur];
      }
      return {path.rbegin(), path.rend()};
    }
    if (b[r][c] == 'H') continue;
    for (int a = 0; a < 4; ++a) {
      int nr = r + kDr[a], nc = c + kDc[a];
      if (nr < 0 || nc < 0 || nr >= n || nc >= n) continue;
      int id = nr * n + nc;
      if (prev[id] != -1 || b[nr][nc] == 'H') continue;
      prev[id] = cur;
      how[id] = a;
      q.push_back(id);
    }
  }
  return {};
}

}  // namespace roll::agentic
