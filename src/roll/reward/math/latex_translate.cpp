// Syntax tree -> GiNaC values. Scalars are translated as lists of alternatives so that "\pm" can
// stand anywhere ("x = 1 \pm \sqrt{2}" is two answers). Every operation that can make GiNaC compute
// a huge exact number (powers, factorials, binomials, exponents in scientific notation) is sized
// first and refused when too large: GiNaC evaluates numeric powers eagerly and cannot be stopped.
#include "roll/reward/math/latex_translate.h"

#include <sstream>

#include "roll/reward/math/latex_normalize.h"

namespace roll::reward {

using GiNaC::ex;
using GiNaC::ex_to;
using GiNaC::is_a;
using GiNaC::numeric;

GiNaC::ex SymbolTable::get(const std::string& name) {
  auto it = symbols_.find(name);
  if (it == symbols_.end()) it = symbols_.emplace(name, GiNaC::symbol(name)).first;
  return it->second;
}

const GiNaC::symbol& infinity_symbol() {
  static const GiNaC::symbol inf("\\infty");
  return inf;
}

GiNaC::ex SymbolTable::infinity() const { return infinity_symbol(); }

namespace {

using Alternatives = std::vector<ex>;
constexpr std::size_t kMaxAlternatives = 8;

[[noreturn]] void parse_error(const std::string& what) { throw LatexParseError(what); }

numeric parse_number(const std::string& lit) {
  std::string mant = lit, expo;
  if (std::size_t e = lit.find_first_of("eE"); e != std::string::npos) {
    mant = lit.substr(0, e);
    expo = lit.substr(e + 1);
  }
  std::string digits;
  long frac = 0;
  bool seen_point = false;
  for (char c : mant) {
    if (c == '.') {
      seen_point = true;
      continue;
    }
    digits += c;
    if (seen_point) ++frac;
  }
  std::size_t nz = digits.find_first_not_of('0');
  digits = nz == std::string::npos ? "0" : digits.substr(nz);
  numeric value(digits.c_str());
  long exp10 = -frac;
  if (!expo.empty()) {
    std::string e = expo;
    bool neg = false;
    if (e[0] == '+' || e[0] == '-') {
      neg = e[0] == '-';
      e = e.substr(1);
    }
    if (e.size() > 5) throw MathRefused("exponent in scientific notation too large: " + lit);
    long v = std::stol(e);
    exp10 += neg ? -v : v;
  }
  if (exp10 > 12000 || exp10 < -12000) throw MathRefused("exponent in scientific notation too large: " + lit);
  if (exp10 >= 0) return value * numeric(10).power(exp10);
  return value / numeric(10).power(-exp10);
}

long bit_length(const numeric& n) {
  if (n.is_zero()) return 0;
  return GiNaC::abs(n).int_length();
}

// Bits of a rational number: the larger of numerator and denominator.
long rational_bits(const numeric& q) { return std::max(bit_length(q.numer()), bit_length(q.denom())); }

ex checked_pow(const ex& base, const ex& exponent) {
  if (is_a<numeric>(exponent)) {
    const numeric n = ex_to<numeric>(exponent);
    const numeric mag = abs(n);
    if (is_a<numeric>(base)) {
      const numeric b = ex_to<numeric>(base);
      const bool trivial = b.is_zero() || b == 1 || b == -1;
      if (!trivial) {
        if (b.is_crational() && b.is_rational() && n.is_rational()) {
          // |b^n| needs about |n| * bits(b) bits.
          if (mag > numeric(kMaxResultBits)) throw MathRefused("power too large to evaluate");
          const double bits = mag.to_double() * static_cast<double>(rational_bits(b));
          if (bits > static_cast<double>(kMaxResultBits)) throw MathRefused("power too large to evaluate");
        } else if (mag > numeric(10000)) {
          throw MathRefused("power too large to evaluate");
        }
      }
    } else if (mag > numeric(10000)) {
      // (sqrt 2)^(10^9) is rewritten by GiNaC to the numeric 2^(5*10^8).
      throw MathRefused("power too large to evaluate");
    }
  }
  return GiNaC::pow(base, exponent);
}

ex checked_factorial(const ex& arg) {
  if (is_a<numeric>(arg)) {
    const numeric n = ex_to<numeric>(arg);
    if (!n.is_nonneg_integer()) parse_error("factorial of a non-natural number");
    if (n > numeric(5000)) throw MathRefused("factorial too large to evaluate");
  }
  return GiNaC::factorial(arg);
}

ex checked_binomial(const ex& n_ex, const ex& k_ex) {
  if (is_a<numeric>(n_ex) && is_a<numeric>(k_ex)) {
    const numeric n = ex_to<numeric>(n_ex), k = ex_to<numeric>(k_ex);
    if (!n.is_integer() || !k.is_integer()) parse_error("binomial of non-integers");
    if (n.is_nonneg_integer() && k.is_nonneg_integer() && k <= n) {
      const numeric m = std::min(k, n - k);
      const double bits = m.to_double() * static_cast<double>(std::max(1L, bit_length(n)));
      if (m > numeric(kMaxResultBits) || bits > static_cast<double>(kMaxResultBits))
        throw MathRefused("binomial too large to evaluate");
    } else if (abs(k) > numeric(10000)) {
      throw MathRefused("binomial too large to evaluate");
    }
  }
  return GiNaC::binomial(n_ex, k_ex);
}

ex apply_function(const std::string& f, const ex& x) {
  if (f == "sin") return GiNaC::sin(x);
  if (f == "cos") return GiNaC::cos(x);
  if (f == "tan") return GiNaC::tan(x);
  if (f == "cot") return 1 / GiNaC::tan(x);
  if (f == "sec") return 1 / GiNaC::cos(x);
  if (f == "csc") return 1 / GiNaC::sin(x);
  if (f == "arcsin" || f == "asin") return GiNaC::asin(x);
  if (f == "arccos" || f == "acos") return GiNaC::acos(x);
  if (f == "arctan" || f == "atan") return GiNaC::atan(x);
  if (f == "arccot") return GiNaC::atan(1 / x);
  if (f == "sinh") return GiNaC::sinh(x);
  if (f == "cosh") return GiNaC::cosh(x);
  if (f == "tanh") return GiNaC::tanh(x);
  if (f == "ln" || f == "log") return GiNaC::log(x);  // \log without a base is natural, as in sympy
  if (f == "lg") return GiNaC::log(x) / GiNaC::log(ex(10));
  if (f == "exp") {
    if (is_a<numeric>(x) && abs(ex_to<numeric>(x)) > numeric(100000)) throw MathRefused("exponential too large");
    return GiNaC::exp(x);
  }
  parse_error("unknown function " + f);
}

class Translator {
 public:
  explicit Translator(SymbolTable& symbols) : symbols_(symbols) {}

  MathValue value(const LatexNode& n) {
    using K = LatexNode::Kind;
    switch (n.kind) {
      case K::kList: {
        MathValue v;
        v.kind = MathValue::Kind::kSet;
        for (const LatexNode& k : n.kids) add_flattened(v, k);
        return v;
      }
      case K::kGroup: {
        MathValue v;
        if (n.text == "{}") {
          v.kind = MathValue::Kind::kSet;
          for (const LatexNode& k : n.kids) add_flattened(v, k);
          return v;
        }
        v.kind = MathValue::Kind::kTuple;
        v.open = n.text[0];
        v.close = n.text[1];
        for (const LatexNode& k : n.kids) v.items.push_back(value(k));
        return v;
      }
      case K::kUnion: {
        MathValue v;
        v.kind = MathValue::Kind::kUnion;
        for (const LatexNode& k : n.kids) {
          MathValue part = value(k);
          if (part.kind != MathValue::Kind::kTuple && part.kind != MathValue::Kind::kSet)
            parse_error("\\cup of something that is not an interval or a set");
          v.items.push_back(std::move(part));
        }
        return v;
      }
      case K::kRelation:
        return relation(n);
      case K::kPercent: {
        MathValue v = scalar_value(n.kids[0]);
        if (v.kind == MathValue::Kind::kScalar) v.percent = true;
        return v;
      }
      default:
        return scalar_value(n);
    }
  }

 private:
  // Items of a set: a "\pm" item contributes both of its values.
  void add_flattened(MathValue& set, const LatexNode& k) {
    MathValue item = value(k);
    if (k.kind != LatexNode::Kind::kGroup && item.kind == MathValue::Kind::kSet) {
      for (MathValue& x : item.items) set.items.push_back(std::move(x));
    } else {
      set.items.push_back(std::move(item));
    }
  }

  MathValue scalar_value(const LatexNode& n) {
    Alternatives alts = scalar(n);
    if (alts.size() == 1) {
      MathValue v;
      v.expr = alts[0];
      return v;
    }
    MathValue set;
    set.kind = MathValue::Kind::kSet;
    for (const ex& a : alts) {
      MathValue v;
      v.expr = a;
      set.items.push_back(std::move(v));
    }
    return set;
  }

  MathValue relation(const LatexNode& n) {
    std::vector<std::string> ops;
    {
      std::istringstream in(n.text);
      for (std::string op; in >> op;) ops.push_back(op);
    }
    const bool all_eq = std::all_of(ops.begin(), ops.end(), [](const std::string& o) { return o == "="; });
    if (ops.size() == 1 && ops[0] == "in") return value(n.kids[1]);  // "x \in [1, 2]"
    if (all_eq && n.kids.size() >= 3) return value(n.kids.back());    // "x = 2 + 3 = 5": the last part
    if (all_eq) {
      MathValue rhs = value(n.kids[1]);
      const bool lone_lhs = n.kids[0].kind == LatexNode::Kind::kSymbol;
      if (rhs.kind != MathValue::Kind::kScalar) {
        // "x = \pm 2" -> {x = 2, x = -2}; "S = \{1, 2\}" -> the set.
        if (!lone_lhs) parse_error("equation with a non-scalar side");
        if (rhs.kind == MathValue::Kind::kSet) {
          ex lhs = single(n.kids[0]);
          for (MathValue& item : rhs.items) {
            if (item.kind != MathValue::Kind::kScalar) return rhs;
            MathValue eq;
            eq.kind = MathValue::Kind::kEquation;
            eq.operands = {lhs, item.expr};
            item = std::move(eq);
          }
        }
        return rhs;
      }
      MathValue eq;
      eq.kind = MathValue::Kind::kEquation;
      eq.operands = {single(n.kids[0]), rhs.expr};
      eq.percent = rhs.percent;
      return eq;
    }
    for (const std::string& op : ops)
      if (op == "=" || op == "in") parse_error("equations mixed with inequalities");
    MathValue rel;
    rel.kind = MathValue::Kind::kRelation;
    rel.ops = std::move(ops);
    for (const LatexNode& k : n.kids) rel.operands.push_back(single(k));
    return rel;
  }

  ex single(const LatexNode& n) {
    Alternatives a = scalar(n);
    if (a.size() != 1) parse_error("\\pm inside a relation");
    return a[0];
  }

  template <typename F>
  Alternatives combine(const Alternatives& a, const Alternatives& b, F f) {
    if (a.size() * b.size() > kMaxAlternatives) parse_error("too many \\pm alternatives");
    Alternatives out;
    for (const ex& x : a)
      for (const ex& y : b) out.push_back(f(x, y));
    return out;
  }

  template <typename F>
  Alternatives map(const Alternatives& a, F f) {
    Alternatives out;
    for (const ex& x : a) out.push_back(f(x));
    return out;
  }

  ex symbol(const std::string& name) {
    if (name == "pi") return GiNaC::Pi;
    if (name == "e") return GiNaC::exp(ex(1));
    if (name == "i") return GiNaC::I;
    if (name == "infty") return symbols_.infinity();
    return symbols_.get(name);
  }

  static ex divide(const ex& a, const ex& b) {
    if (b.is_zero()) parse_error("division by zero");
    return a / b;
  }

  Alternatives scalar(const LatexNode& n) {
    using K = LatexNode::Kind;
    switch (n.kind) {
      case K::kNumber:
        return {parse_number(n.text)};
      case K::kSymbol:
        return {symbol(n.text)};
      case K::kAdd: {
        Alternatives acc = scalar(n.kids[0]);
        for (std::size_t i = 1; i < n.kids.size(); ++i)
          acc = combine(acc, scalar(n.kids[i]), [](const ex& x, const ex& y) { return x + y; });
        return acc;
      }
      case K::kNeg:
        return map(scalar(n.kids[0]), [](const ex& x) { return -x; });
      case K::kPlusMinus: {
        if (n.kids.size() == 1) {
          Alternatives b = scalar(n.kids[0]);
          Alternatives out;
          for (const ex& x : b) {
            out.push_back(x);
            out.push_back(-x);
          }
          if (out.size() > kMaxAlternatives) parse_error("too many \\pm alternatives");
          return out;
        }
        Alternatives a = scalar(n.kids[0]), b = scalar(n.kids[1]);
        Alternatives plus = combine(a, b, [](const ex& x, const ex& y) { return x + y; });
        Alternatives minus = combine(a, b, [](const ex& x, const ex& y) { return x - y; });
        plus.insert(plus.end(), minus.begin(), minus.end());
        if (plus.size() > kMaxAlternatives) parse_error("too many \\pm alternatives");
        return plus;
      }
      case K::kMul:
        return combine(scalar(n.kids[0]), scalar(n.kids[1]), [](const ex& x, const ex& y) { return x * y; });
      case K::kDiv:
        return combine(scalar(n.kids[0]), scalar(n.kids[1]), divide);
      case K::kPow:
        return combine(scalar(n.kids[0]), scalar(n.kids[1]), checked_pow);
      case K::kFunc: {
        Alternatives arg = scalar(n.kids[0]);
        if (n.kids.size() == 2) {  // \log_b x
          return combine(arg, scalar(n.kids[1]), [](const ex& x, const ex& b) {
            return divide(GiNaC::log(x), GiNaC::log(b));
          });
        }
        const std::string f = n.text;
        return map(arg, [&](const ex& x) { return apply_function(f, x); });
      }
      case K::kRoot: {
        Alternatives rad = scalar(n.kids[0]);
        if (n.kids.size() == 1) return map(rad, [](const ex& x) { return GiNaC::sqrt(x); });
        return combine(rad, scalar(n.kids[1]), [](const ex& x, const ex& k) { return checked_pow(x, divide(1, k)); });
      }
      case K::kFactorial:
        return map(scalar(n.kids[0]), checked_factorial);
      case K::kBinom:
        return combine(scalar(n.kids[0]), scalar(n.kids[1]), checked_binomial);
      case K::kAbs:
        return map(scalar(n.kids[0]), [](const ex& x) { return GiNaC::abs(x); });
      case K::kPercent:
        return map(scalar(n.kids[0]), [](const ex& x) { return x / 100; });
      case K::kRelation:
      case K::kGroup:
      case K::kList:
      case K::kUnion:
        parse_error("a relation, tuple or set inside arithmetic");
    }
    parse_error("unknown node");
  }

  SymbolTable& symbols_;
};

void print(std::ostream& os, const MathValue& v) {
  switch (v.kind) {
    case MathValue::Kind::kScalar:
      os << v.expr;
      if (v.percent) os << "%";
      return;
    case MathValue::Kind::kEquation:
      os << v.operands[0] << " = " << v.operands[1];
      return;
    case MathValue::Kind::kRelation:
      for (std::size_t i = 0; i < v.operands.size(); ++i) {
        if (i) os << ' ' << v.ops[i - 1] << ' ';
        os << v.operands[i];
      }
      return;
    case MathValue::Kind::kTuple:
    case MathValue::Kind::kSet:
    case MathValue::Kind::kUnion: {
      const char* sep = v.kind == MathValue::Kind::kUnion ? " U " : ", ";
      os << (v.kind == MathValue::Kind::kTuple ? std::string(1, v.open) : v.kind == MathValue::Kind::kSet ? "{" : "");
      for (std::size_t i = 0; i < v.items.size(); ++i) {
        if (i) os << sep;
        print(os, v.items[i]);
      }
      os << (v.kind == MathValue::Kind::kTuple ? std::string(1, v.close) : v.kind == MathValue::Kind::kSet ? "}" : "");
      return;
    }
  }
}

}  // namespace

MathValue translate_tree(const LatexNode& tree, SymbolTable& symbols) {
  try {
    Translator t(symbols);
    return t.value(tree);
  } catch (const MathRefused&) {
    throw;
  } catch (const LatexParseError&) {
    throw;
  } catch (const std::exception& e) {
    // GiNaC's own errors (pole_error, domain errors): the input is not a usable expression.
    throw LatexParseError(std::string("GiNaC: ") + e.what());
  }
}

MathValue translate_latex(std::string_view latex, SymbolTable& symbols) {
  if (latex.size() > kMaxAnswerChars)
    throw MathRefused("answer of " + std::to_string(latex.size()) + " characters (limit " +
                      std::to_string(kMaxAnswerChars) + ")");
  const std::string normalized = normalize_latex(latex);
  return translate_tree(parse_latex(normalized), symbols);
}

std::string to_string(const MathValue& value) {
  std::ostringstream os;
  print(os, value);
  return os.str();
}

}  // namespace roll::reward
