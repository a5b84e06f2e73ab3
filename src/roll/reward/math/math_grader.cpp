// One math_rule comparison (see math_grader.h).
#include "roll/reward/math/math_grader.h"

#include <optional>

#include "roll/reward/math/latex_translate.h"
#include "roll/reward/math/math_equivalence.h"

namespace roll::reward {
namespace {

std::string clip(std::string_view s, std::size_t n = 200) {
  if (s.size() <= n) return std::string(s);
  return std::string(s.substr(0, n)) + "...";
}

}  // namespace

GradeResult grade_math_answer(std::string_view gold, std::string_view answer, AnswerForm form) {
  GradeResult r;
  SymbolTable symbols;
  MathValue gold_value;
  try {
    gold_value = translate_latex(gold, symbols);
  } catch (const MathRefused& e) {
    r.verdict = MathVerdict::kRefused;
    r.detail = std::string("ground truth refused: ") + e.what();
    return r;
  } catch (const std::exception& e) {
    r.verdict = MathVerdict::kGoldUnparsable;
    r.detail = "ground truth '" + clip(gold) + "': " + e.what();
    return r;
  }
  if (answer.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    r.verdict = MathVerdict::kNoAnswer;
    r.detail = "empty answer";
    return r;
  }

  std::optional<MathValue> pred;
  std::string used, last_error;
  bool refused = false;
  auto attempt = [&](std::string_view text) {
    try {
      pred = translate_latex(text, symbols);
      used = std::string(text);
    } catch (const MathRefused& e) {
      refused = true;
      last_error = e.what();
    } catch (const std::exception& e) {
      last_error = e.what();
    }
  };
  if (form == AnswerForm::kLatex) {
    attempt(answer);
  } else {
    std::vector<AnswerCandidate> candidates = find_answer_candidates(answer);
    if (candidates.empty()) last_error = "no formula in the answer region";
    for (const AnswerCandidate& c : candidates) {
      attempt(c.text);
      if (pred) break;
    }
  }
  if (!pred) {
    r.verdict = refused ? MathVerdict::kRefused : MathVerdict::kAnswerUnparsable;
    r.detail = "answer: " + last_error;
    return r;
  }
  try {
    r.verdict = equivalent(gold_value, *pred) ? MathVerdict::kCorrect : MathVerdict::kWrong;
    r.detail = "gold " + clip(to_string(gold_value)) + " vs answer " + clip(to_string(*pred));
  } catch (const MathRefused& e) {
    r.verdict = MathVerdict::kRefused;
    r.detail = std::string("comparison refused: ") + e.what();
  } catch (const std::exception& e) {
    r.verdict = MathVerdict::kWrong;
    r.detail = std::string("comparison failed: ") + e.what();
  }
  return r;
}

}  // namespace roll::reward
