#pragma once
// When are two translated answers the same? (docs/rewards.md step 3, `verify(gold, pred)`). Runs in the
// verifier process only (GiNaC).
//   scalars: exact comparison when both are rational (complex rational) numbers; else GiNaC normal()
//   of the difference is 0; else numeric evaluation at kEvalDigits digits (symbols substituted by
//   kEvalPoints random rational points) within a relative tolerance of kRelTolerance. Decimals are
//   exact rationals, so 3.14 vs \pi and 0.333 vs 1/3 are not equal.
//   equations: "x = 3" equals "3" when one side is a lone variable; two equations are equal when
//   their (lhs - rhs) differ by a nonzero constant factor.
//   sets and bare lists compare as sets; tuples and intervals item by item with the same brackets;
//   unions as sets of intervals; inequalities by operator and (lhs - rhs) up to a positive factor,
//   or as intervals; a percent answer also matches its value divided by 100.
#include "roll/reward/math/latex_translate.h"

namespace roll::reward {

inline constexpr int kEvalDigits = 60;
inline constexpr int kEvalPoints = 3;
inline constexpr double kRelTolerance = 1e-30;

bool equivalent(const MathValue& gold, const MathValue& answer);

// Scalar rule alone (tests).
bool scalars_equal(const GiNaC::ex& a, const GiNaC::ex& b);

}  // namespace roll::reward
