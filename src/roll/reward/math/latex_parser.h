#pragma once
// Recursive-descent parser for the LaTeX answer subset (second part of our LaTeX -> expression
// translator; input is normalize_latex's output). It builds a small syntax tree; latex_translate
// turns the tree into GiNaC values. Nesting deeper than kMaxLatexDepth is refused, not parsed.
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace roll::reward {

// Input we decline to evaluate (too long, too deep, a power or factorial too large). Scores 0 and
// is counted as "refused", separately from parse failures.
class MathRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Input that is not in the subset we read.
class LatexParseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Counted per grammar level (about six per bracket), so ~80 nested brackets.
inline constexpr int kMaxLatexDepth = 500;

struct LatexNode {
  enum class Kind : unsigned char {
    kNumber,     // text: decimal literal, maybe with exponent ("12", "0.5", "1.5e-3")
    kSymbol,     // text: name ("x", "x_1", "alpha"; "e", "i", "pi", "infty" are constants)
    kAdd,        // kids: summands
    kNeg,        // kids[0]
    kPlusMinus,  // a \pm b: kids {a, b}; unary \pm b: kids {b}
    kMul,        // kids {a, b}
    kDiv,        // kids {numerator, denominator}
    kPow,        // kids {base, exponent}
    kFunc,       // text: function name; kids {argument} or {argument, log base}
    kRoot,       // kids {radicand} or {radicand, index}
    kFactorial,  // kids[0]
    kBinom,      // kids {n, k}
    kAbs,        // kids[0]
    kPercent,    // kids[0]
    kRelation,   // text: operators separated by spaces ("=", "< <="); kids: operands
    kGroup,      // text: opening and closing delimiter ("()", "(]", "[]", "{}" for sets); kids: items
    kList,       // a bare comma list: kids
    kUnion,      // kids: sets or intervals joined by \cup
  };
  Kind kind = Kind::kNumber;
  std::string text;
  std::vector<LatexNode> kids;
};

// Parses normalized LaTeX. Throws LatexParseError or MathRefused.
LatexNode parse_latex(std::string_view normalized);

// For messages and tests: the tree in prefix form, e.g. "(add 1 (div 1 2))".
std::string to_string(const LatexNode& node);

}  // namespace roll::reward
