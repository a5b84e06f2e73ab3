#pragma once
// ROLL's default action parser (parse_action_utils.default_parser_action_func): strip special
// tokens, search `action_pattern` (DOTALL), map the action text to an id case-insensitively.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace roll::agentic {

struct ParsedAction {
  std::optional<int> action;  // nullopt = invalid (no match, or not an action name)
  std::string action_content;
  std::string think_content;
};

class ActionParser {
 public:
  // `pattern`: one group (action) or two groups (think, action). Errors name the bad pattern.
  ActionParser(const std::string& pattern, std::map<int, std::string> actions,
               std::vector<std::string> special_tokens = {"<|im_start|>", "<|im_end|>"});
  ~ActionParser();
  ActionParser(ActionParser&&) noexcept;
  ParsedAction parse(const std::string& response) const;
  const std::map<int, std::string>& actions() const { return actions_; }

 private:
  struct Regex;
  std::unique_ptr<Regex> regex_;
  std::map<int, std::string> actions_;
  std::vector<std::string> special_tokens_;
};

}  // namespace roll::agentic
