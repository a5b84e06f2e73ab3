// A model's response as the math rule reward reads it in the worker: answer selection (boxed,
// after </think>), LaTeX normalisation and parsing. Symbolic evaluation runs in the
// roll-math-verifier helper under a time and memory limit and is not fuzzed in-process.
#include "../fuzz_target.h"
#include "roll/reward/math/latex_normalize.h"
#include "roll/reward/math/latex_parser.h"
#include "roll/reward/math/math_answer.h"

ROLL_FUZZ_TARGET(math_answer) {
  const auto parts = roll::fuzz::split_parts(bytes, 2);
  (void)roll::reward::select_answer(parts[0], parts[1]);
  (void)roll::reward::extract_last_boxed(parts[0]);
  (void)roll::reward::find_answer_candidates(parts[0]);
  const std::string normalized = roll::reward::normalize_latex(parts[0]);
  try {
    (void)roll::reward::to_string(roll::reward::parse_latex(normalized));
  } catch (const roll::reward::LatexParseError&) {
    // Not LaTeX the parser reads, or refused (too deep): the grader then compares strings or refuses.
  } catch (const roll::reward::MathRefused&) {
  }
}
