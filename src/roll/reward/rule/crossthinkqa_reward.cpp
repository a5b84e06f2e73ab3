#include "roll/reward/rule/crossthinkqa_reward.h"

#include "roll/core/error.h"
#include "roll/reward/rule/py_text.h"
#include "roll/reward/rule/rule_shaping.h"

namespace roll::reward {
namespace {

// The content of the last non-overlapping match of \\boxed\{([^}]+)\}; false when none.
bool last_boxed(std::string_view s, std::string& content) {
  constexpr std::string_view kOpen = "\\boxed{";
  bool found = false;
  size_t from = 0;
  for (size_t at = s.find(kOpen); at != std::string_view::npos; at = s.find(kOpen, from)) {
    const size_t body = at + kOpen.size();
    const size_t close = s.find('}', body);
    if (close == std::string_view::npos) break;  // no later match can close either
    if (close == body) {                          // "\boxed{}": [^}]+ needs one character
      from = at + 1;
      continue;
    }
    content.assign(s.substr(body, close - body));
    found = true;
    from = close + 1;
  }
  return found;
}

// The byte offset of the last "answer is" ignoring ASCII case, or npos.
size_t last_answer_is(std::string_view s) {
  std::string lower(s);
  for (char& c : lower)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  return lower.rfind("answer is");
}

}  // namespace

CrossThinkQaRewardType parse_crossthinkqa_reward_type(const std::string& name, const std::string& key) {
  if (name == "loose") return CrossThinkQaRewardType::loose;
  if (name == "soft") return CrossThinkQaRewardType::soft;
  if (name == "strict") return CrossThinkQaRewardType::strict;
  throw ConfigError(key, "CrossThinkQA's reward_type is loose, soft or strict, not '" + name + "'");
}

std::string crossthinkqa_extract(std::string_view answer_text, bool& format_ok) {
  std::string boxed;
  format_ok = last_boxed(answer_text, boxed);
  if (format_ok) return boxed;
  const size_t at = last_answer_is(answer_text);
  if (at == std::string_view::npos) return std::string(answer_text);
  return std::string(answer_text.substr(at + 9));
}

CrossThinkQaResult CrossThinkQaReward::score(std::string_view response, std::string_view ground_truth,
                                             int64_t responses_width) const {
  CrossThinkQaResult r;
  const std::string text = rule::without_special_tokens(response);
  r.extracted = crossthinkqa_extract(rule::extract_after_last_think(text), r.format_ok);

  const std::u32string truth = rule::from_utf8(ground_truth);
  for (char32_t c : rule::from_utf8(r.extracted)) {
    if (!rule::py_isupper(c)) continue;
    r.correct = !truth.empty() && c == truth.front();  // ROLL indexes ground_truth[0] (raises on "")
    break;
  }

  switch (type_) {
    case CrossThinkQaRewardType::loose:
      r.rule_reward = r.correct ? 1.0 : -1.0;
      break;
    case CrossThinkQaRewardType::soft:
      r.rule_reward = r.correct ? (r.format_ok ? 1.0 : 0.5) : (r.format_ok ? -0.5 : -1.0);
      break;
    case CrossThinkQaRewardType::strict:
      r.rule_reward = r.correct && r.format_ok ? 1.0 : -1.0;
      break;
  }
  r.score = r.rule_reward > 0 ? 1.0 : 0.0;
  r.repetition_penalty = rule::repetition_penalty(text);
  r.length_reward = rule::response_length_reward(responses_width);
  r.response_level_reward = rule::fp16_add(rule::fp16_add(r.rule_reward, r.repetition_penalty),
                                           rule::fp16_scale(length_coef_, r.length_reward));
  return r;
}

}  // namespace roll::reward
