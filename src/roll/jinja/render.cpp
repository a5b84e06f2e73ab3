#include "roll/jinja/render.h"

#include <optional>

#include "roll/core/error.h"
#include "roll/jinja/builtins.h"
#include "roll/jinja/error.h"
#include "roll/jinja/ops.h"

namespace roll::jinja {

namespace {

// Deep enough for any sane macro recursion; stops a runaway template before the C++ stack does.
constexpr int kMaxCallDepth = 256;

struct Scope {
  const Scope* parent = nullptr;
  ValueDict vars;

  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent)
      if (const Value* v = s->vars.find(name)) return v;
    return nullptr;
  }
};

enum class Flow { Normal, Break, Continue };

class Renderer {
 public:
  explicit Renderer(const std::string& name) : name_(name) {}

  std::string run(const Body& body, const ValueDict& context) {
    Scope builtins{nullptr, globals()};
    Scope root{&builtins, context};
    std::string out;
    exec(body, root, out);
    return out;
  }

 private:
  Flow exec(const Body& body, Scope& scope, std::string& out) {
    for (const StmtPtr& s : body) {
      const Flow f = exec_stmt(*s, scope, out);
      if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
  }

  Flow exec_stmt(const Stmt& s, Scope& scope, std::string& out) {
    try {
      return exec_inner(s, scope, out);
    } catch (const TemplateError&) {
      throw;
    } catch (const std::exception& e) {
      throw TemplateError(name_, s.line, e.what());
    }
  }

  Flow exec_inner(const Stmt& s, Scope& scope, std::string& out) {
    switch (s.kind) {
      case Stmt::Kind::Text: out += static_cast<const TextStmt&>(s).text; return Flow::Normal;
      case Stmt::Kind::Output: out += to_str(eval(*static_cast<const OutputStmt&>(s).expr, scope)); return Flow::Normal;
      case Stmt::Kind::If: {
        const auto& node = static_cast<const IfStmt&>(s);
        for (const auto& [test, body] : node.branches)
          if (eval(*test, scope).truthy()) return exec(body, scope, out);
        return exec(node.else_body, scope, out);
      }
      case Stmt::Kind::For: return exec_for(static_cast<const ForStmt&>(s), scope, out);
      case Stmt::Kind::Set: {
        const auto& node = static_cast<const SetStmt&>(s);
        assign(node.target, eval(*node.value, scope), scope);
        return Flow::Normal;
      }
      case Stmt::Kind::SetBlock: {
        const auto& node = static_cast<const SetBlockStmt&>(s);
        std::string captured;
        exec(node.body, scope, captured);
        assign(node.target, apply_filters(node.filters, Value(std::move(captured)), scope), scope);
        return Flow::Normal;
      }
      case Stmt::Kind::Macro: {
        const auto& node = static_cast<const MacroStmt&>(s);
        const Scope* defined_in = &scope;
        scope.vars.set(node.name, Value::function(node.name, [this, &node, defined_in](const CallArgs& a) {
                         return call_macro(node, defined_in, a);
                       }));
        return Flow::Normal;
      }
      case Stmt::Kind::Break: return Flow::Break;
      case Stmt::Kind::Continue: return Flow::Continue;
      case Stmt::Kind::Scope: {
        const auto& node = static_cast<const ScopeStmt&>(s);
        Scope inner{&scope, {}};
        for (const auto& [target, value] : node.assignments) assign(target, eval(*value, scope), inner);
        return exec(node.body, inner, out);
      }
      case Stmt::Kind::FilterBlock: {
        const auto& node = static_cast<const FilterBlockStmt&>(s);
        std::string captured;
        const Flow f = exec(node.body, scope, captured);
        out += to_str(apply_filters(node.filters, Value(std::move(captured)), scope));
        return f;
      }
    }
    return Flow::Normal;
  }

  Value apply_filters(const std::vector<FilterCall>& filters, Value v, Scope& scope) {
    for (const FilterCall& f : filters) v = apply_filter(f.name, v, eval_args(f.args, scope));
    return v;
  }

  void bind_targets(const std::vector<std::string>& targets, const Value& item, Scope& scope) {
    if (targets.size() == 1) {
      scope.vars.set(targets[0], item);
      return;
    }
    const ValueList parts = iterate(item);
    if (parts.size() != targets.size()) {
      const std::string expected = std::to_string(targets.size());
      throw roll::Error(parts.size() > targets.size()
                            ? "too many values to unpack (expected " + expected + ")"
                            : "not enough values to unpack (expected " + expected + ", got " +
                                  std::to_string(parts.size()) + ")");
    }
    for (std::size_t i = 0; i < parts.size(); ++i) scope.vars.set(targets[i], parts[i]);
  }

  void assign(const AssignTarget& target, Value v, Scope& scope) {
    if (!target.attribute.empty()) {
      const Value* ns = scope.find(target.names[0]);
      if (!ns || !ns->is_namespace()) throw roll::Error("cannot assign attribute on non-namespace object");
      ns->namespace_attrs().set(target.attribute, std::move(v));
      return;
    }
    bind_targets(target.names, v, scope);
  }

  static Value make_loop(const ValueList& items, std::size_t i) {
    const auto n = static_cast<std::int64_t>(items.size());
    const auto idx = static_cast<std::int64_t>(i);
    ValueDict loop;
    loop.set("index0", Value(idx));
    loop.set("index", Value(idx + 1));
    loop.set("revindex0", Value(n - idx - 1));
    loop.set("revindex", Value(n - idx));
    loop.set("first", Value(idx == 0));
    loop.set("last", Value(idx == n - 1));
    loop.set("length", Value(n));
    loop.set("depth0", Value(std::int64_t{0}));
    loop.set("depth", Value(std::int64_t{1}));
    loop.set("previtem", i > 0 ? items[i - 1] : Value::undefined("there is no previous item"));
    loop.set("nextitem", idx + 1 < n ? items[i + 1] : Value::undefined("there is no next item"));
    loop.set("cycle", Value::function("cycle", [i](const CallArgs& a) {
               if (a.positional.empty()) throw roll::Error("no items for cycling given");
               return a.positional[i % a.positional.size()];
             }));
    return Value::dict(std::move(loop));
  }

  Flow exec_for(const ForStmt& node, Scope& scope, std::string& out) {
    ValueList items = iterate(eval(*node.iterable, scope));
    if (node.filter) {
      ValueList kept;
      for (Value& item : items) {
        Scope probe{&scope, {}};
        bind_targets(node.targets, item, probe);
        if (eval(*node.filter, probe).truthy()) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    for (std::size_t i = 0; i < items.size(); ++i) {
      Scope iteration{&scope, {}};  // fresh each time: a `set` in the body lasts one iteration
      bind_targets(node.targets, items[i], iteration);
      iteration.vars.set("loop", make_loop(items, i));
      if (exec(node.body, iteration, out) == Flow::Break) break;
    }
    if (items.empty()) {
      Scope inner{&scope, {}};
      exec(node.else_body, inner, out);
    }
    return Flow::Normal;
  }

  Value call_macro(const MacroStmt& m, const Scope* defined_in, const CallArgs& a) {
    if (depth_ >= kMaxCallDepth) throw roll::Error("macro '" + m.name + "' recursed too deeply");
    struct DepthGuard {
      int& d;
      explicit DepthGuard(int& x) : d(x) { ++d; }
      ~DepthGuard() { --d; }
    } guard(depth_);
    Scope s{defined_in, {}};
    std::vector<bool> bound(m.params.size(), false);
    ValueList varargs;
    for (std::size_t i = 0; i < a.positional.size(); ++i) {
      if (i < m.params.size()) {
        s.vars.set(m.params[i].first, a.positional[i]);
        bound[i] = true;
      } else {
        varargs.push_back(a.positional[i]);
      }
    }
    ValueDict kwargs;
    for (const auto& [key, value] : a.keyword) {
      std::size_t p = 0;
      while (p < m.params.size() && m.params[p].first != key) ++p;
      if (p == m.params.size()) {
        kwargs.set(key, value);
        continue;
      }
      if (bound[p]) throw roll::Error("macro '" + m.name + "' got multiple values for argument '" + key + "'");
      s.vars.set(key, value);
      bound[p] = true;
    }
    for (std::size_t p = 0; p < m.params.size(); ++p) {
      if (bound[p]) continue;
      const auto& [param, dflt] = m.params[p];
      s.vars.set(param, dflt ? eval(*dflt, s) : Value::undefined("parameter '" + param + "' was not provided"));
    }
    s.vars.set("varargs", Value::list(std::move(varargs)));
    s.vars.set("kwargs", Value::dict(std::move(kwargs)));
    std::string out;
    exec(m.body, s, out);
    return Value(std::move(out));
  }

  CallArgs eval_args(const Arguments& args, Scope& scope) {
    CallArgs out;
    for (const ExprPtr& e : args.positional) out.positional.push_back(eval(*e, scope));
    for (const auto& [k, e] : args.keyword) out.keyword.emplace_back(k, eval(*e, scope));
    return out;
  }

  std::optional<std::int64_t> slice_part(const ExprPtr& e, Scope& scope) {
    if (!e) return std::nullopt;
    const Value v = eval(*e, scope);
    if (v.is_none()) return std::nullopt;
    if (!v.is_int() && !v.is_bool()) throw roll::Error("slice indices must be integers or None");
    return v.as_int();
  }

  static bool compare(CompareExpr::Op op, const Value& a, const Value& b) {
    switch (op) {
      case CompareExpr::Op::Eq: return equals(a, b);
      case CompareExpr::Op::Ne: return !equals(a, b);
      case CompareExpr::Op::Lt: return less(a, b);
      case CompareExpr::Op::Gt: return less(b, a);
      case CompareExpr::Op::Le: return less(a, b) || equals(a, b);
      case CompareExpr::Op::Ge: return less(b, a) || equals(a, b);
      case CompareExpr::Op::In: return contains(b, a);
      case CompareExpr::Op::NotIn: return !contains(b, a);
    }
    return false;
  }

  Value eval(const Expr& e, Scope& scope) {
    try {
      return eval_inner(e, scope);
    } catch (const TemplateError&) {
      throw;
    } catch (const std::exception& ex) {
      throw TemplateError(name_, e.line, ex.what());
    }
  }

  Value eval_inner(const Expr& e, Scope& scope) {
    switch (e.kind) {
      case Expr::Kind::Literal: return static_cast<const LiteralExpr&>(e).value;
      case Expr::Kind::Name: {
        const auto& name = static_cast<const NameExpr&>(e).name;
        const Value* v = scope.find(name);
        return v ? *v : Value::undefined("'" + name + "' is undefined");
      }
      case Expr::Kind::List: {
        const auto& node = static_cast<const ListExpr&>(e);
        ValueList items;
        for (const ExprPtr& item : node.items) items.push_back(eval(*item, scope));
        return node.tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
      }
      case Expr::Kind::Dict: {
        ValueDict d;
        for (const auto& [k, v] : static_cast<const DictExpr&>(e).items) {
          const Value key = eval(*k, scope);
          if (!key.is_string()) throw roll::Error("dict literal keys must be strings in this renderer");
          d.set(key.as_string(), eval(*v, scope));
        }
        return Value::dict(std::move(d));
      }
      case Expr::Kind::GetAttr: {
        const auto& node = static_cast<const GetAttrExpr&>(e);
        return get_attr(eval(*node.object, scope), node.name);
      }
      case Expr::Kind::GetItem: {
        const auto& node = static_cast<const GetItemExpr&>(e);
        const Value object = eval(*node.object, scope);
        return get_item(object, eval(*node.index, scope));
      }
      case Expr::Kind::Slice: {
        const auto& node = static_cast<const SliceExpr&>(e);
        const Value object = eval(*node.object, scope);
        const auto start = slice_part(node.start, scope), stop = slice_part(node.stop, scope);
        return slice(object, start, stop, slice_part(node.step, scope));
      }
      case Expr::Kind::Call: {
        const auto& node = static_cast<const CallExpr&>(e);
        const Value callee = eval(*node.callee, scope);
        const CallArgs args = eval_args(node.args, scope);
        if (callee.is_function()) return callee.call(args);
        if (callee.is_undefined()) throw roll::Error(callee.undefined_hint());
        throw roll::Error("'" + callee.type_name() + "' object is not callable");
      }
      case Expr::Kind::Filter: {
        const auto& node = static_cast<const FilterExpr&>(e);
        const Value v = eval(*node.value, scope);
        return apply_filter(node.name, v, eval_args(node.args, scope));
      }
      case Expr::Kind::Test: {
        const auto& node = static_cast<const TestExpr&>(e);
        const Value v = eval(*node.value, scope);
        return Value(apply_test(node.name, v, eval_args(node.args, scope)) != node.negated);
      }
      case Expr::Kind::Unary: {
        const auto& node = static_cast<const UnaryExpr&>(e);
        const Value v = eval(*node.operand, scope);
        if (node.op == UnaryExpr::Op::Not) return Value(!v.truthy());
        if (node.op == UnaryExpr::Op::Neg) return negate(v);
        if (!v.is_number()) throw roll::Error("bad operand type for unary +: '" + v.type_name() + "'");
        return v.is_bool() ? Value(v.as_int()) : v;
      }
      case Expr::Kind::Binary: {
        const auto& node = static_cast<const BinaryExpr&>(e);
        Value left = eval(*node.left, scope);
        if (node.op == BinaryExpr::Op::And) return left.truthy() ? eval(*node.right, scope) : left;
        if (node.op == BinaryExpr::Op::Or) return left.truthy() ? left : eval(*node.right, scope);
        return binary_op(node.op, left, eval(*node.right, scope));
      }
      case Expr::Kind::Compare: {
        const auto& node = static_cast<const CompareExpr&>(e);
        Value left = eval(*node.first, scope);
        for (const auto& [op, expr] : node.rest) {
          Value right = eval(*expr, scope);
          if (!compare(op, left, right)) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case Expr::Kind::Condition: {
        const auto& node = static_cast<const ConditionExpr&>(e);
        if (eval(*node.test, scope).truthy()) return eval(*node.then_value, scope);
        if (node.else_value) return eval(*node.else_value, scope);
        return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                                " evaluated to false and no else section was defined.");
      }
    }
    return Value();
  }

  const std::string& name_;
  int depth_ = 0;
};

}  // namespace

std::string render(const Body& body, const std::string& template_name, const ValueDict& context) {
  return Renderer(template_name).run(body, context);
}

}  // namespace roll::jinja
