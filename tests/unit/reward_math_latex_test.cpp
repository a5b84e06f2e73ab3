// Our LaTeX -> GiNaC translator and the equivalence rules, in-process (single-threaded test; the
// reward itself only runs these in the verifier process).
#include <gtest/gtest.h>

#include "roll/reward/math/latex_normalize.h"
#include "roll/reward/math/latex_parser.h"
#include "roll/reward/math/latex_translate.h"
#include "roll/reward/math/math_equivalence.h"
#include "roll/reward/math/math_grader.h"

namespace roll::reward {
namespace {

std::string squash(std::string s) {
  std::erase(s, ' ');
  return s;
}

bool same(std::string_view gold, std::string_view answer) {
  return grade_math_answer(gold, answer, AnswerForm::kLatex).verdict == MathVerdict::kCorrect;
}

TEST(RewardMathLatex, NormalizeStripsWrappersUnitsAndSeparators) {
  EXPECT_EQ(squash(normalize_latex("$\\left( \\dfrac{1}{2} \\right)$")), "(\\frac{1}{2})");
  EXPECT_EQ(normalize_latex("1,000,000"), "1000000");
  EXPECT_EQ(normalize_latex("(1,000)"), "(1,000)");  // inside brackets a comma separates items
  EXPECT_EQ(normalize_latex("1{,}000"), "1000");
  EXPECT_EQ(normalize_latex("12 \\text{ cm}^2"), "12");
  EXPECT_EQ(normalize_latex("90^\\circ"), "90");
  EXPECT_EQ(normalize_latex("\\$5.50"), "5.50");
  EXPECT_EQ(normalize_latex("20 percent"), "20%");
  EXPECT_EQ(squash(normalize_latex("x = 1 \\text{ or } x = 2")), "x=1,x=2");
  EXPECT_EQ(strip_trailing_units("2 \\cdot h"), "2 \\cdot h");  // a variable after an operator stays
}

TEST(RewardMathLatex, ParserPrecedenceAndShortArguments) {
  EXPECT_EQ(to_string(parse_latex("-2^2")), "(neg (pow 2 2))");
  EXPECT_EQ(to_string(parse_latex("\\frac12")), "(div 1 2)");
  EXPECT_EQ(to_string(parse_latex("x^23")), "(mul (pow x 2) 3)");
  EXPECT_EQ(to_string(parse_latex("3\\frac{1}{2}")), "(add 3 (div 1 2))");
  EXPECT_EQ(to_string(parse_latex("2\\frac{x}{3}")), "(mul 2 (div x 3))");
  EXPECT_EQ(to_string(parse_latex("\\sin 2x")), "(func[sin] (mul 2 x))");
  EXPECT_EQ(to_string(parse_latex("(1,2]")), "(group[(]] 1 2)");
  EXPECT_EQ(to_string(parse_latex("\\log_2 8")), "(func[log] 8 2)");
  EXPECT_THROW(parse_latex("\\frac{1}{"), LatexParseError);
  EXPECT_THROW(parse_latex(std::string(3000, '(') + "1" + std::string(3000, ')')), MathRefused);
}

TEST(RewardMathLatex, GinacLeavesSqrt8MinusTwoSqrt2NonZeroButWeDoNot) {
  const GiNaC::ex d = GiNaC::sqrt(GiNaC::ex(8)) - 2 * GiNaC::sqrt(GiNaC::ex(2));
  EXPECT_FALSE(d.normal().is_zero());  // why the numeric stage exists
  EXPECT_TRUE(scalars_equal(GiNaC::sqrt(GiNaC::ex(8)), 2 * GiNaC::sqrt(GiNaC::ex(2))));
  EXPECT_TRUE(same("\\sqrt{8}", "2\\sqrt{2}"));
}

TEST(RewardMathLatex, ExactRationalsAndNearMisses) {
  EXPECT_TRUE(same("0.5", "\\frac{1}{2}"));
  EXPECT_FALSE(same("\\pi", "3.14"));
  EXPECT_FALSE(same("\\frac{1}{3}", "0.333"));
  EXPECT_FALSE(same("\\frac{1}{3}", "0.3333333333333333333333333"));  // decimals are exact
  EXPECT_FALSE(same("e^{-100}", "0"));
}

TEST(RewardMathLatex, HugeNumbersRefusedBeforeEvaluation) {
  SymbolTable t;
  EXPECT_THROW(translate_latex("10^{10^{9}}", t), MathRefused);
  EXPECT_THROW(translate_latex("100000!", t), MathRefused);
  EXPECT_THROW(translate_latex("(1+\\sqrt{2})^{99999999}", t), MathRefused);
  EXPECT_THROW(translate_latex(std::string(kMaxAnswerChars + 1, '1'), t), MathRefused);
  EXPECT_NO_THROW(translate_latex("2^{10000}", t));
  EXPECT_NO_THROW(translate_latex("1000!", t));
}

TEST(RewardMathLatex, SymbolsAreSharedBetweenGoldAndAnswer) {
  SymbolTable t;
  MathValue a = translate_latex("x+y", t), b = translate_latex("y+x", t);
  EXPECT_TRUE((a.expr - b.expr).is_zero());
  EXPECT_TRUE(equivalent(a, b));
}

TEST(RewardMathLatex, StructuredAnswers) {
  EXPECT_TRUE(same("[2, \\infty)", "x \\ge 2"));
  EXPECT_FALSE(same("(2, \\infty)", "x \\ge 2"));
  EXPECT_TRUE(same("\\{1, 2\\}", "2, 1"));
  EXPECT_FALSE(same("(1, 2)", "(2, 1)"));
  EXPECT_TRUE(same("x = 3", "3"));
  EXPECT_TRUE(same("2x + 4 = 0", "x = -2"));
  EXPECT_TRUE(same("\\pm\\sqrt{2}", "-\\sqrt2, \\sqrt2"));
  EXPECT_TRUE(same("3 + 4i", "(2+i)^2"));
}

}  // namespace
}  // namespace roll::reward
