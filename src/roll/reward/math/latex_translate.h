#pragma once
// LaTeX -> GiNaC values (last part of our translator: normalize_latex, parse_latex, then this).
// GiNaC is not thread-safe: everything here runs in the math verifier process (math_verifier.h),
// one thread, never in a threaded worker.
#include <ginac/ginac.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "roll/reward/math/latex_parser.h"

namespace roll::reward {

// Answers longer than this (after extraction) are refused rather than parsed.
inline constexpr std::size_t kMaxAnswerChars = 20000;
// Exact numbers may grow to this many bits (~39,000 decimal digits); larger powers, factorials and
// binomials are refused before GiNaC evaluates them (10^{10^{9}}, 100000!).
inline constexpr long kMaxResultBits = 1L << 17;

// Gold and answer must share symbols: GiNaC symbols with equal names are distinct objects.
class SymbolTable {
 public:
  GiNaC::ex get(const std::string& name);
  GiNaC::ex infinity() const;
  const std::map<std::string, GiNaC::symbol>& symbols() const { return symbols_; }

 private:
  std::map<std::string, GiNaC::symbol> symbols_;
};

struct MathValue {
  enum class Kind : unsigned char {
    kScalar,    // expr
    kEquation,  // operands {lhs, rhs}
    kRelation,  // inequality chain: operands, ops ("<", "<=", ">", ">=", "!=")
    kTuple,     // ordered items with delimiters: tuples, points, intervals ("(]" is half-open)
    kSet,       // unordered items: \{...\}, bare comma lists, "x = \pm 2"
    kUnion,     // unordered intervals/sets joined by \cup
  };
  Kind kind = Kind::kScalar;
  GiNaC::ex expr;
  std::vector<GiNaC::ex> operands;
  std::vector<std::string> ops;
  std::vector<MathValue> items;
  char open = 0, close = 0;
  bool percent = false;  // a scalar written with a trailing %; expr is the number before the %
};

// Normalizes, parses and translates. Throws LatexParseError or MathRefused.
MathValue translate_latex(std::string_view latex, SymbolTable& symbols);
// The tree part alone (tests).
MathValue translate_tree(const LatexNode& tree, SymbolTable& symbols);

std::string to_string(const MathValue& value);

// The one symbol every table uses for \infty (interval ends, "x > 2" as (2, \infty)).
const GiNaC::symbol& infinity_symbol();

}  // namespace roll::reward
