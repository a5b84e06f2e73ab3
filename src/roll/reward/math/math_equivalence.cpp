// Equivalence of translated answers (see math_equivalence.h for the rules).
#include "roll/reward/math/math_equivalence.h"

#include <optional>
#include <random>
#include <set>

namespace roll::reward {

using GiNaC::ex;
using GiNaC::ex_to;
using GiNaC::is_a;
using GiNaC::numeric;

namespace {

constexpr std::size_t kMaxSetItems = 64;

bool is_exact_number(const ex& e) { return is_a<numeric>(e) && ex_to<numeric>(e).is_crational(); }

void collect_symbols(const ex& e, std::set<ex, GiNaC::ex_is_less>& out) {
  for (auto it = e.preorder_begin(); it != e.preorder_end(); ++it)
    if (is_a<GiNaC::symbol>(*it)) out.insert(*it);
}

// One numeric comparison at the current point; nullopt when either side does not evaluate.
std::optional<bool> close_enough(const ex& a, const ex& b) {
  ex va, vb;
  try {
    va = a.evalf();
    vb = b.evalf();
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!is_a<numeric>(va) || !is_a<numeric>(vb)) return std::nullopt;
  const numeric x = ex_to<numeric>(va), y = ex_to<numeric>(vb);
  const numeric diff = abs(x - y);
  const numeric scale = std::max(abs(x), abs(y));
  static const numeric kRel = numeric(1) / numeric(10).power(30);
  static const numeric kAbs = numeric(1) / numeric(10).power(kEvalDigits - 10);
  static_assert(kRelTolerance == 1e-30);
  return diff <= kRel * scale + kAbs;
}

bool numerically_equal(const ex& a, const ex& b) {
  std::set<ex, GiNaC::ex_is_less> syms;
  collect_symbols(a, syms);
  collect_symbols(b, syms);
  GiNaC::Digits = kEvalDigits;
  if (syms.empty()) return close_enough(a, b).value_or(false);
  // Fixed seed: the same pair always gets the same verdict. Points are positive rationals in
  // [0.5, 2.5] (log and sqrt stay real), distinct per symbol.
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> pick(49, 251);
  int good = 0;
  for (int attempt = 0; attempt < 4 * kEvalPoints && good < kEvalPoints; ++attempt) {
    GiNaC::exmap at;
    for (const ex& s : syms) at[s] = numeric(pick(rng), 97) + numeric(attempt % 7, 1009);
    ex sa, sb;
    try {
      sa = a.subs(at);
      sb = b.subs(at);
    } catch (const std::exception&) {
      continue;  // a pole at this point: try another
    }
    std::optional<bool> r = close_enough(sa, sb);
    if (!r) continue;
    if (!*r) return false;
    ++good;
  }
  return good > 0;
}

bool lone_symbol(const ex& e) { return is_a<GiNaC::symbol>(e) && !e.is_equal(infinity_symbol()); }

// normal(d1 / d2) is a numeric constant satisfying `ok`.
template <typename Ok>
bool constant_ratio(const ex& d1, const ex& d2, Ok ok) {
  if (d2.is_zero()) return false;
  try {
    ex q = (d1 / d2).normal();
    if (is_a<numeric>(q) && ex_to<numeric>(q).is_real() && !q.is_zero()) return ok(ex_to<numeric>(q));
  } catch (const std::exception&) {
  }
  return false;
}

MathValue percent_scaled(const MathValue& v) {
  MathValue out = v;
  if (out.kind == MathValue::Kind::kScalar) out.expr = v.expr / 100;
  if (out.kind == MathValue::Kind::kEquation) out.operands[1] = v.operands[1] / 100;
  out.percent = false;
  return out;
}

bool core_equal(const MathValue& a, const MathValue& b);

bool sets_equal(const std::vector<MathValue>& a, const std::vector<MathValue>& b) {
  if (a.size() > kMaxSetItems || b.size() > kMaxSetItems) return false;
  auto covered = [](const std::vector<MathValue>& xs, const std::vector<MathValue>& ys) {
    for (const MathValue& x : xs) {
      bool found = false;
      for (const MathValue& y : ys)
        if (core_equal(x, y)) {
          found = true;
          break;
        }
      if (!found) return false;
    }
    return true;
  };
  return covered(a, b) && covered(b, a);
}

bool equations_equal(const MathValue& a, const MathValue& b) {
  auto oriented = [](const MathValue& e) {
    if (!lone_symbol(e.operands[0]) && lone_symbol(e.operands[1])) return std::pair(e.operands[1], e.operands[0]);
    return std::pair(e.operands[0], e.operands[1]);
  };
  auto [l1, r1] = oriented(a);
  auto [l2, r2] = oriented(b);
  if (lone_symbol(l1) && lone_symbol(l2) && l1.is_equal(l2)) return scalars_equal(r1, r2);
  const ex d1 = l1 - r1, d2 = l2 - r2;
  if (scalars_equal(d1, d2) || scalars_equal(d1, -d2)) return true;
  return constant_ratio(d1, d2, [](const numeric&) { return true; });
}

// An equation with a lone variable on one side against a plain value: compare the other side.
bool equation_vs_scalar(const MathValue& eq, const MathValue& s) {
  if (lone_symbol(eq.operands[0]) && scalars_equal(eq.operands[1], s.expr)) return true;
  if (lone_symbol(eq.operands[1]) && scalars_equal(eq.operands[0], s.expr)) return true;
  return false;
}

// "a < x <= b", "x >= 2", "3 > x" as an interval over their single variable; nullopt otherwise.
std::optional<MathValue> relation_as_interval(const MathValue& r) {
  auto endpoint = [](const ex& e) {
    MathValue v;
    v.expr = e;
    return v;
  };
  auto strict = [](const std::string& op) { return op == "<" || op == ">"; };
  auto less = [](const std::string& op) { return op == "<" || op == "<="; };
  auto greater = [](const std::string& op) { return op == ">" || op == ">="; };
  const ex inf = infinity_symbol();
  MathValue iv;
  iv.kind = MathValue::Kind::kTuple;
  if (r.operands.size() == 2) {
    const std::string& op = r.ops[0];
    if (op == "!=") return std::nullopt;
    ex var, bound;
    bool var_left;
    if (lone_symbol(r.operands[0]) && !r.operands[1].has(r.operands[0])) {
      var = r.operands[0], bound = r.operands[1], var_left = true;
    } else if (lone_symbol(r.operands[1]) && !r.operands[0].has(r.operands[1])) {
      var = r.operands[1], bound = r.operands[0], var_left = false;
    } else {
      return std::nullopt;
    }
    const bool upper = var_left ? less(op) : greater(op);  // var below the bound
    if (upper) {
      iv.open = '(';
      iv.close = strict(op) ? ')' : ']';
      iv.items = {endpoint(-inf), endpoint(bound)};
    } else {
      iv.open = strict(op) ? '(' : '[';
      iv.close = ')';
      iv.items = {endpoint(bound), endpoint(inf)};
    }
    return iv;
  }
  if (r.operands.size() == 3 && lone_symbol(r.operands[1])) {
    const std::string &o1 = r.ops[0], &o2 = r.ops[1];
    if (less(o1) && less(o2)) {
      iv.open = strict(o1) ? '(' : '[';
      iv.close = strict(o2) ? ')' : ']';
      iv.items = {endpoint(r.operands[0]), endpoint(r.operands[2])};
      return iv;
    }
    if (greater(o1) && greater(o2)) {
      iv.open = strict(o2) ? '(' : '[';
      iv.close = strict(o1) ? ')' : ']';
      iv.items = {endpoint(r.operands[2]), endpoint(r.operands[0])};
      return iv;
    }
  }
  return std::nullopt;
}

bool tuples_equal(const MathValue& a, const MathValue& b) {
  if (a.items.size() != b.items.size() || a.open != b.open || a.close != b.close) return false;
  for (std::size_t i = 0; i < a.items.size(); ++i)
    if (!core_equal(a.items[i], b.items[i])) return false;
  return true;
}

bool relations_equal(const MathValue& a, const MathValue& b) {
  auto ia = relation_as_interval(a), ib = relation_as_interval(b);
  if (ia && ib) return tuples_equal(*ia, *ib);
  if (a.operands.size() != 2 || b.operands.size() != 2) return false;
  // Orient to "<" / "<=" / "!=": d = lhs - rhs.
  auto canon = [](const MathValue& r) {
    std::string op = r.ops[0];
    ex d = r.operands[0] - r.operands[1];
    if (op == ">") op = "<", d = -d;
    if (op == ">=") op = "<=", d = -d;
    return std::pair(op, d);
  };
  auto [op1, d1] = canon(a);
  auto [op2, d2] = canon(b);
  if (op1 != op2) return false;
  if (op1 == "!=") return constant_ratio(d1, d2, [](const numeric&) { return true; });
  return constant_ratio(d1, d2, [](const numeric& q) { return q.is_positive(); });
}

bool core_equal(const MathValue& a, const MathValue& b) {
  using K = MathValue::Kind;
  if (a.kind == K::kScalar && b.kind == K::kScalar) return scalars_equal(a.expr, b.expr);
  if (a.kind == K::kEquation && b.kind == K::kEquation) return equations_equal(a, b);
  if (a.kind == K::kEquation && b.kind == K::kScalar) return equation_vs_scalar(a, b);
  if (a.kind == K::kScalar && b.kind == K::kEquation) return equation_vs_scalar(b, a);
  if (a.kind == K::kSet && b.kind == K::kSet) return sets_equal(a.items, b.items);
  if (a.kind == K::kSet) return a.items.size() == 1 && core_equal(a.items[0], b);
  if (b.kind == K::kSet) return b.items.size() == 1 && core_equal(a, b.items[0]);
  if (a.kind == K::kUnion && b.kind == K::kUnion) return sets_equal(a.items, b.items);
  if (a.kind == K::kUnion) return a.items.size() == 1 && core_equal(a.items[0], b);
  if (b.kind == K::kUnion) return b.items.size() == 1 && core_equal(a, b.items[0]);
  if (a.kind == K::kTuple && b.kind == K::kTuple) return tuples_equal(a, b);
  if (a.kind == K::kRelation && b.kind == K::kRelation) return relations_equal(a, b);
  if (a.kind == K::kRelation && b.kind == K::kTuple) {
    auto ia = relation_as_interval(a);
    return ia && tuples_equal(*ia, b);
  }
  if (a.kind == K::kTuple && b.kind == K::kRelation) {
    auto ib = relation_as_interval(b);
    return ib && tuples_equal(a, *ib);
  }
  return false;
}

}  // namespace

bool scalars_equal(const ex& a, const ex& b) {
  if (is_exact_number(a) && is_exact_number(b)) return a.is_equal(b);
  const ex d = a - b;
  if (d.is_zero()) return true;
  try {
    if (d.normal().is_zero()) return true;
  } catch (const std::exception&) {
  }
  // Infinity is a symbol only so that intervals can carry it: never substitute numbers for it.
  if (a.has(infinity_symbol()) || b.has(infinity_symbol())) return false;
  return numerically_equal(a, b);
}

bool equivalent(const MathValue& gold, const MathValue& answer) {
  if (gold.percent == answer.percent) return core_equal(gold, answer);
  // One side wrote "%": "50\%" matches both 50 and 0.5.
  if (core_equal(gold, answer)) return true;
  return core_equal(gold.percent ? percent_scaled(gold) : gold, answer.percent ? percent_scaled(answer) : answer);
}

}  // namespace roll::reward
