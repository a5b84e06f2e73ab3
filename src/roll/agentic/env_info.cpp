#include <fmt/format.h>

#include "roll/agentic/env.h"

namespace roll::agentic {

nlohmann::json step_info(bool effective, bool valid, bool success, double format_penalty, const std::string& desc,
                         const std::string& action_content, const std::string& think_content) {
  return {{"metrics",
           {{"action_is_effective", effective},
            {"action_is_valid", valid},
            {"success", success},
            {"format_penalty", format_penalty}}},
          {"metrics_agg_mode",
           {{"action_is_effective", "mean"}, {"action_is_valid", "mean"}, {"success", "last"}, {"format_penalty", "mean"}}},
          {"action_desc", desc},
          {"action_content", action_content},
          {"think_content", think_content}};
}

std::string action_description(int turn, const std::string& action, bool effective) {
  if (action.empty()) return fmt::format("At turn {}, You did not provide a valid action.", turn);
  if (effective) return fmt::format("At turn {}, you moved {}, which is effective.", turn, action);
  return fmt::format("At turn {}, you tried to move {}, which is not effective yet.", turn, action);
}

}  // namespace roll::agentic
