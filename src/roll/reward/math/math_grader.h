#pragma once
// One math_rule comparison, in-process: parse the ground truth ("$" + gt + "$" in ROLL), parse the
// answer (boxed content, or the first formula candidate of the answer region that translates), and
// decide equivalence. Uses GiNaC: call it only in the verifier process (math_verifier_main.cpp) or
// from single-threaded tests.
#include <string>
#include <string_view>

#include "roll/reward/math/math_answer.h"
#include "roll/reward/math/math_verdict.h"

namespace roll::reward {

struct GradeResult {
  MathVerdict verdict = MathVerdict::kWrong;
  std::string detail;  // what was parsed, or why nothing was
};

GradeResult grade_math_answer(std::string_view gold, std::string_view answer, AnswerForm form);

}  // namespace roll::reward
