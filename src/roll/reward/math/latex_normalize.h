#pragma once
// LaTeX clean-up before parsing (first half of our LaTeX -> expression translator): math delimiters,
// spacing and sizing commands, \text-like wrappers (unwrapped), \boxed, degrees, currency, percent
// words, "and"/"or" between answers, thousands separators and trailing unit words. The result is
// the small LaTeX subset latex_parser reads. Pure string work; linear in the input.
#include <string>
#include <string_view>

namespace roll::reward {

std::string normalize_latex(std::string_view latex);

// Exposed for tests: remove trailing unit words ("5 cm", "3 square units", "10 \text{ inches}^2").
std::string strip_trailing_units(std::string_view s);

}  // namespace roll::reward
