#include "roll/agentic/sokoban.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "roll/core/error.h"

namespace roll::agentic {
namespace {

const int kDr[4] = {-1, 1, 0, 0};  // Up, Down, Left, Right (action - 1)
const int kDc[4] = {0, 0, -1, 1};
const char* kNames[4] = {"Up", "Down", "Left", "Right"};

// The five 3x3 brushes of gym-sokoban's room topology generator.
const int kMasks[5][3][3] = {{{0, 0, 0}, {1, 1, 1}, {0, 0, 0}},
                             {{0, 1, 0}, {0, 1, 0}, {0, 1, 0}},
                             {{0, 0, 0}, {1, 1, 0}, {0, 1, 0}},
                             {{0, 0, 0}, {1, 1, 0}, {1, 1, 0}},
                             {{0, 0, 0}, {0, 1, 1}, {0, 1, 0}}};

constexpr int Wall = Sokoban::Wall, Floor = Sokoban::Floor, Target = Sokoban::Target, BoxOnTarget = Sokoban::BoxOnTarget,
              Box = Sokoban::Box, Player = Sokoban::Player;

// Reverse play state for the generator's depth-first search.
struct ReverseSearch {
  int rows, cols, num_boxes;
  const std::vector<int>& fixed;
  std::set<std::vector<int>> explored;
  std::vector<int> best_state;
  double best_score = -1;

  double displacement(const std::vector<std::pair<int, int>>& mapping) const {  // target -> box position
    double s = 0;
    for (const auto& [t, b] : mapping) s += std::abs(t / cols - b / cols) + std::abs(t % cols - b % cols);
    return s;
  }

  // One reverse move: the player steps to a free cell; actions 0-3 also pull the box behind it.
  bool reverse_move(std::vector<int>& state, int& player, std::vector<std::pair<int, int>>& mapping, int& last_pull,
                    int action) const {
    const int d = action % 4;
    const int r = player / cols, c = player % cols;
    const int nr = r + kDr[d], nc = c + kDc[d];
    if (nr < 0 || nc < 0 || nr >= rows || nc >= cols) return false;
    const int next = nr * cols + nc;
    if (state[next] != Floor && state[next] != Target) return false;
    state[player] = fixed[player];
    state[next] = Player;
    if (action < 4) {
      const int br = r - kDr[d], bc = c - kDc[d];
      if (br >= 0 && bc >= 0 && br < rows && bc < cols) {
        const int box = br * cols + bc;
        if (state[box] == Box || state[box] == BoxOnTarget) {
          state[player] = fixed[player] == Target ? BoxOnTarget : Box;
          state[box] = fixed[box];
          for (size_t k = 0; k < mapping.size(); ++k)
            if (mapping[k].second == box) {
              mapping[k].second = player;
              last_pull = static_cast<int>(k);
            }
        }
      }
    }
    player = next;
    return true;
  }

  void dfs(const std::vector<int>& state, int player, const std::vector<std::pair<int, int>>& mapping, int swaps,
           int last_pull, int ttl) {
    if (--ttl <= 0 || explored.size() >= 300000) return;
    if (explored.count(state)) return;
    explored.insert(state);
    // A level counts only when every box has left its target (all targets uncovered).
    int empty_targets = 0;
    for (int v : state) empty_targets += v == Target;
    const double score = empty_targets == num_boxes ? swaps * displacement(mapping) : 0.0;
    if (score > best_score) {
      best_score = score;
      best_state = state;
    }
    for (int action = 0; action < 8; ++action) {
      std::vector<int> next = state;
      std::vector<std::pair<int, int>> m = mapping;
      int p = player, lp = last_pull;
      if (!reverse_move(next, p, m, lp, action)) continue;
      dfs(next, p, m, lp != last_pull ? swaps + 1 : swaps, lp, ttl);
    }
  }
};

}  // namespace

SokobanConfig SokobanConfig::from_json(const nlohmann::ordered_json& j) {
  SokobanConfig c;
  auto get = [&](const char* key, auto& out) {
    if (!j.contains(key) || j[key].is_null()) return;
    try {
      out = j[key].get<std::decay_t<decltype(out)>>();
    } catch (const std::exception&) {
      throw Error(fmt::format("sokoban env_config key '{}' has the wrong type: {}", key, j[key].dump()));
    }
  };
  if (j.contains("dim_room")) {
    auto d = j["dim_room"];
    if (!d.is_array() || d.size() != 2) throw Error("sokoban env_config key 'dim_room' must be [rows, cols]");
    c.rows = d[0].get<int>();
    c.cols = d[1].get<int>();
  }
  get("num_boxes", c.num_boxes);
  get("search_depth", c.search_depth);
  get("max_steps", c.max_steps);
  get("format_penalty", c.format_penalty);
  get("action_pattern", c.action_pattern);
  get("env_instruction", c.env_instruction);
  if (j.contains("grid_lookup") && j["grid_lookup"].is_object()) {
    c.grid_lookup.clear();
    for (auto it = j["grid_lookup"].begin(); it != j["grid_lookup"].end(); ++it)
      c.grid_lookup[std::stoi(it.key())] = it.value().get<std::string>();
  }
  if (j.contains("grid_vocab") && j["grid_vocab"].is_object()) {
    c.grid_vocab.clear();
    for (auto it = j["grid_vocab"].begin(); it != j["grid_vocab"].end(); ++it)
      c.grid_vocab.emplace_back(it.key(), it.value().get<std::string>());
  }
  if (c.rows < 4 || c.cols < 4 || c.rows > 64 || c.cols > 64)
    throw Error(fmt::format("sokoban env_config dim_room [{}, {}] must be within [4, 64]", c.rows, c.cols));
  if (c.num_boxes < 1) throw Error("sokoban env_config num_boxes must be >= 1");
  return c;
}

Sokoban::Sokoban(SokobanConfig config)
    : config_(std::move(config)), parser_(config_.action_pattern, {{Up, "Up"}, {Down, "Down"}, {Left, "Left"}, {Right, "Right"}}) {}

bool Sokoban::generate(SeededRng& rng) {
  const int R = config_.rows, C = config_.cols;
  const int num_steps = static_cast<int>(1.7 * (R + C));
  for (int attempt = 0; attempt < 4; ++attempt) {
    // (1) topology: a random walk painting 3x3 brushes; the border is wall.
    std::vector<int> level(R * C, 0);
    int dir = static_cast<int>(rng.below(4));
    int pr = static_cast<int>(rng.range(1, R)), pc = static_cast<int>(rng.range(1, C));
    for (int s = 0; s < num_steps; ++s) {
      if (rng.uniform() < 0.35) dir = static_cast<int>(rng.below(4));
      pr = std::clamp(pr + kDr[dir], 1, R - 2);
      pc = std::clamp(pc + kDc[dir], 1, C - 2);
      const auto& m = kMasks[rng.below(5)];
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
          const int r = pr - 1 + i, c = pc - 1 + j;
          if (m[i][j] && r >= 0 && c >= 0 && r < R && c < C) level[r * C + c] = Floor;
        }
    }
    for (int r = 0; r < R; ++r) level[r * C] = level[r * C + C - 1] = Wall;
    for (int c = 0; c < C; ++c) level[c] = level[(R - 1) * C + c] = Wall;
    // (2) the player, then each box on its own target.
    auto free_cells = [&] {
      std::vector<int> out;
      for (int i = 0; i < R * C; ++i)
        if (level[i] == Floor) out.push_back(i);
      return out;
    };
    if (static_cast<int>(free_cells().size()) <= config_.num_boxes + 1) continue;
    int player = free_cells()[rng.below(free_cells().size())];
    level[player] = Player;
    std::vector<std::pair<int, int>> mapping;
    for (int b = 0; b < config_.num_boxes; ++b) {
      auto cells = free_cells();
      int t = cells[rng.below(cells.size())];
      level[t] = Target;
      mapping.emplace_back(t, t);
    }
    std::vector<int> fixed = level;
    fixed[player] = Floor;
    std::vector<int> solved = level;
    for (auto& v : solved)
      if (v == Target) v = BoxOnTarget;
    // (3) reverse play: pull boxes away from their targets; keep the most scrambled state.
    ReverseSearch search{R, C, config_.num_boxes, fixed, {}, {}, -1};
    search.dfs(solved, player, mapping, 0, -1, config_.search_depth);
    if (search.best_score <= 0) continue;
    fixed_ = fixed;
    state_ = search.best_state;
    for (int i = 0; i < R * C; ++i)
      if (state_[i] == Player) player_ = i;
    return true;
  }
  return false;
}

EnvReset Sokoban::reset(uint64_t seed) {
  // A generation failure (score 0 after 4 rooms) draws a new stream, as ROLL reseeds and retries.
  uint64_t s = seed;
  for (int tries = 0;; ++tries) {
    SeededRng rng(s);
    if (generate(rng)) {
      // (4) ROLL's extra random player walk (no pushes, no revisits) so the player does not always
      // start next to the last pulled box.
      const double p_walk = 0.5;
      if (rng.uniform() < p_walk) {
        std::set<int> visited{player_};
        for (int k = 0; k < 3; ++k) {
          std::vector<int> options;
          for (int d = 0; d < 4; ++d) {
            int r = player_ / config_.cols + kDr[d], c = player_ % config_.cols + kDc[d];
            int n = r * config_.cols + c;
            if ((state_[n] == Floor || state_[n] == Target) && !visited.count(n)) options.push_back(n);
          }
          if (options.empty()) break;
          int n = options[rng.below(options.size())];
          state_[player_] = fixed_[player_];
          state_[n] = Player;
          player_ = n;
          visited.insert(n);
          if (rng.uniform() >= 0.5) break;
        }
      }
      break;
    }
    if (tries > 100) throw Error(fmt::format("sokoban: no level after 100 reseeds from seed {}", seed));
    s = s * 6364136223846793005ull + 1442695040888963407ull;
  }
  steps_ = 0;
  // docs/design.md section 4, quirk 11, fixed: count boxes already on targets, so no free +1 on the first step.
  boxes_on_target_ = count_boxes_on_target();
  return {render(), nlohmann::json{{"env_instruction", instructions()}}};
}

int Sokoban::count_boxes_on_target() const {
  int n = 0;
  for (int v : state_) n += v == BoxOnTarget;
  return n;
}

std::string Sokoban::instructions() const {
  std::string vocab, sep;
  for (const auto& [sym, meaning] : config_.grid_vocab) {
    vocab += sep + sym + ": " + meaning;
    sep = ", ";
  }
  return config_.env_instruction + "\nThe meaning of each symbol in the state is:\n" + vocab +
         "\nYour available actions are:\nUp, Down, Left, Right";
}

std::string Sokoban::render() const {
  std::string out;
  for (int r = 0; r < config_.rows; ++r) {
    if (r) out += "\n";
    for (int c = 0; c < config_.cols; ++c) {
      const int i = r * config_.cols + c;
      int v = state_[i];
      if (v == Player && fixed_[i] == Target) v = 6;
      auto it = config_.grid_lookup.find(v);
      out += it == config_.grid_lookup.end() ? "?" : it->second;
    }
  }
  return out;
}

EnvStep Sokoban::step(const std::string& response) {
  ParsedAction a = parser_.parse(response);
  if (!a.action) {
    // docs/design.md section 4, quirk 11, fixed: an invalid action does not play a step; only the format penalty.
    EnvStep s;
    s.observation = render();
    s.reward = config_.format_penalty;
    s.info = step_info(false, false, success(), config_.format_penalty, action_description(steps_ + 1, "", false),
                       a.action_content, a.think_content);
    return s;
  }
  return step_action(*a.action, a.action_content, a.think_content);
}

EnvStep Sokoban::step_action(int action, const std::string& action_content, const std::string& think) {
  if (action < 1 || action > 4) throw Error(fmt::format("Sokoban action {} is not 1..4", action));
  const int C = config_.cols, R = config_.rows;
  const int d = action - 1;
  ++steps_;
  const int r = player_ / C, c = player_ % C;
  const int nr = r + kDr[d], nc = c + kDc[d];
  bool moved = false;
  if (nr >= 0 && nc >= 0 && nr < R && nc < C) {
    const int next = nr * C + nc;
    const int br = nr + kDr[d], bc = nc + kDc[d];
    const bool box_ahead = state_[next] == Box || state_[next] == BoxOnTarget;
    if (box_ahead && br >= 0 && bc >= 0 && br < R && bc < C) {
      const int beyond = br * C + bc;
      if (state_[beyond] == Floor || state_[beyond] == Target) {  // push
        state_[beyond] = fixed_[beyond] == Target ? BoxOnTarget : Box;
        state_[next] = Player;
        state_[player_] = fixed_[player_];
        player_ = next;
        moved = true;
      }
    } else if (state_[next] == Floor || state_[next] == Target) {  // move
      state_[next] = Player;
      state_[player_] = fixed_[player_];
      player_ = next;
      moved = true;
    }
  }
  EnvStep s;
  s.reward = -0.1;
  const int now = count_boxes_on_target();
  if (now > boxes_on_target_) s.reward += 1.0;
  if (now < boxes_on_target_) s.reward -= 1.0;
  boxes_on_target_ = now;
  const bool won = success();
  if (won) s.reward += 10.0;
  s.terminated = won || steps_ >= config_.max_steps;
  s.truncated = s.terminated && !won;
  s.observation = render();
  s.info = step_info(moved, true, won, 0.0, action_description(steps_, kNames[d], moved), action_content, think);
  return s;
}

}  // namespace roll::agentic
