#pragma once
// Optimal (breadth-first search) actions for the built-in games, the expert behind the SFT warm
// start data of the demo (expert_data.h): FrozenLake's shortest path around the holes, Sokoban's
// fewest-moves solution over (player, boxes) states.
#include <optional>
#include <string>
#include <vector>

namespace roll::agentic {

class Env;

// The response text of the first optimal action from the env's current state ("Left", "Up", ...),
// or nullopt when the state has no solution (a box pushed into a corner) or the env type has no
// expert. Sokoban searches at most `max_states` states.
std::optional<std::string> expert_action(const Env& env, size_t max_states = 200000);

// The action names an env accepts, in its action-id order (for uniformly random actions).
std::vector<std::string> action_names(const Env& env);

}  // namespace roll::agentic
