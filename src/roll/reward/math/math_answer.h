#pragma once
// Answer extraction for the math_rule reward (docs/rewards.md steps 1-2): which part of a response is the
// answer. Pure string work, no GiNaC: the worker side runs it, the verifier process parses the result.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace roll::reward {

// docs/rewards.md ("Answer region"): "<|endoftext|>" and "<pad>" are removed from decoded prompts and responses.
std::string remove_special_tokens(std::string_view text);

// ROLL's `_extract_after_last_end_think(response, prompt)` (docs/rewards.md step 1, quirk 14 reproduced):
// the stripped text after the last "</think>", else after the last "\n\n", else "". Returns "" when
// the think tags are malformed (prompt ending in "<think>" and the response has "<think>" or more
// than one "</think>"; otherwise more than one "</think>" or a "<think>" not at position 0).
std::string extract_after_last_end_think(std::string_view response, std::string_view prompt);

// Content of the LAST "\boxed{" (or "\boxed\{") with brace matching; braces inside double-quoted
// spans are ignored (as ROLL). nullopt when there is no \boxed or it is never closed.
std::optional<std::string> extract_last_boxed(std::string_view text);

// What the verifier is asked to parse: boxed content (a LaTeX formula) or the whole answer region
// (free text from which candidate formulas are extracted).
enum class AnswerForm : unsigned char { kLatex = 0, kText = 1 };

struct SelectedAnswer {
  std::string text;  // "" when nothing can be extracted (scores 0)
  AnswerForm form = AnswerForm::kText;
};

// Steps 1-2 together: region, then the last \boxed content, else the region itself.
SelectedAnswer select_answer(std::string_view response, std::string_view prompt);

// A formula candidate found in free text (math_verify's extraction without fallback, simplified):
// LaTeX environments ($..$, $$..$$, \(..\), \[..\], bare \frac{a}{b}) and plain numbers or
// arithmetic expressions. Ordered by anchor priority ("final answer is" < "answer:" < "answer" <
// unanchored), then rightmost first; the verifier takes the first one that parses.
struct AnswerCandidate {
  std::string text;
  bool latex = false;  // false: a plain-text number/expression
  int priority = 300;
  std::size_t begin = 0, end = 0;
};
std::vector<AnswerCandidate> find_answer_candidates(std::string_view region, std::size_t max_candidates = 64);

}  // namespace roll::reward
