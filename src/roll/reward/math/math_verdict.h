#pragma once
// The outcome classes of one math_rule verification (docs/rewards.md: anything but kCorrect scores 0).
#include <string_view>

namespace roll::reward {

enum class MathVerdict : unsigned char {
  kCorrect = 0,
  kWrong = 1,             // both sides parsed, not equivalent
  kNoAnswer = 2,          // no answer region (think tags, quirk 14) or empty answer
  kGoldUnparsable = 3,    // the ground truth did not translate
  kAnswerUnparsable = 4,  // nothing in the answer translated
  kRefused = 5,           // too long, too deep, or a power/factorial too large to evaluate
  kTimeout = 6,           // the verifier process ran past the per-sample limit (killed, restarted)
  kError = 7,             // the verifier process crashed or could not be started
};

constexpr std::string_view verdict_name(MathVerdict v) {
  switch (v) {
    case MathVerdict::kCorrect: return "correct";
    case MathVerdict::kWrong: return "wrong";
    case MathVerdict::kNoAnswer: return "no_answer";
    case MathVerdict::kGoldUnparsable: return "gold_parse_failure";
    case MathVerdict::kAnswerUnparsable: return "answer_parse_failure";
    case MathVerdict::kRefused: return "refused";
    case MathVerdict::kTimeout: return "timeout";
    case MathVerdict::kError: return "error";
  }
  return "unknown";
}

}  // namespace roll::reward
