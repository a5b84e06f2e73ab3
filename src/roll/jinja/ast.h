#pragma once
// The syntax tree the parser builds and the renderer walks. Nodes are plain data tagged with a
// kind; every node keeps the template line it came from for error messages.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "roll/jinja/value.h"

namespace roll::jinja {

struct Expr {
  enum class Kind { Literal, Name, List, Dict, GetAttr, GetItem, Slice, Call, Filter, Test, Unary, Binary, Compare, Condition };
  Expr(Kind k, int l) : kind(k), line(l) {}
  virtual ~Expr() = default;
  Kind kind;
  int line;
};
using ExprPtr = std::unique_ptr<Expr>;

struct Arguments {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
};

struct LiteralExpr : Expr {
  LiteralExpr(int l, Value v) : Expr(Kind::Literal, l), value(std::move(v)) {}
  Value value;
};

struct NameExpr : Expr {
  NameExpr(int l, std::string n) : Expr(Kind::Name, l), name(std::move(n)) {}
  std::string name;
};

// List and tuple literals.
struct ListExpr : Expr {
  explicit ListExpr(int l, bool t = false) : Expr(Kind::List, l), tuple(t) {}
  std::vector<ExprPtr> items;
  bool tuple;
};

struct DictExpr : Expr {
  explicit DictExpr(int l) : Expr(Kind::Dict, l) {}
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};

struct GetAttrExpr : Expr {  // a.b: attribute first, then item (Jinja's getattr)
  GetAttrExpr(int l, ExprPtr o, std::string n) : Expr(Kind::GetAttr, l), object(std::move(o)), name(std::move(n)) {}
  ExprPtr object;
  std::string name;
};

struct GetItemExpr : Expr {  // a[b]: item first, then attribute (Jinja's getitem)
  GetItemExpr(int l, ExprPtr o, ExprPtr i) : Expr(Kind::GetItem, l), object(std::move(o)), index(std::move(i)) {}
  ExprPtr object;
  ExprPtr index;
};

struct SliceExpr : Expr {  // a[start:stop:step]; omitted parts are null
  SliceExpr(int l, ExprPtr o) : Expr(Kind::Slice, l), object(std::move(o)) {}
  ExprPtr object, start, stop, step;
};

struct CallExpr : Expr {
  CallExpr(int l, ExprPtr c) : Expr(Kind::Call, l), callee(std::move(c)) {}
  ExprPtr callee;
  Arguments args;
};

struct FilterExpr : Expr {  // value | name(args)
  FilterExpr(int l, ExprPtr v, std::string n) : Expr(Kind::Filter, l), value(std::move(v)), name(std::move(n)) {}
  ExprPtr value;
  std::string name;
  Arguments args;
};

struct TestExpr : Expr {  // value is [not] name(args)
  TestExpr(int l, ExprPtr v, std::string n, bool neg)
      : Expr(Kind::Test, l), value(std::move(v)), name(std::move(n)), negated(neg) {}
  ExprPtr value;
  std::string name;
  Arguments args;
  bool negated;
};

struct UnaryExpr : Expr {
  enum class Op { Not, Neg, Pos };
  UnaryExpr(int l, Op o, ExprPtr e) : Expr(Kind::Unary, l), op(o), operand(std::move(e)) {}
  Op op;
  ExprPtr operand;
};

struct BinaryExpr : Expr {
  enum class Op { Add, Sub, Mul, Div, FloorDiv, Mod, Pow, Concat, And, Or };
  BinaryExpr(int l, Op o, ExprPtr a, ExprPtr b) : Expr(Kind::Binary, l), op(o), left(std::move(a)), right(std::move(b)) {}
  Op op;
  ExprPtr left, right;
};

struct CompareExpr : Expr {  // a < b <= c chains as in Python
  enum class Op { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };
  CompareExpr(int l, ExprPtr f) : Expr(Kind::Compare, l), first(std::move(f)) {}
  ExprPtr first;
  std::vector<std::pair<Op, ExprPtr>> rest;
};

struct ConditionExpr : Expr {  // then_value if test else else_value (else may be absent)
  ConditionExpr(int l, ExprPtr t, ExprPtr a, ExprPtr b)
      : Expr(Kind::Condition, l), test(std::move(t)), then_value(std::move(a)), else_value(std::move(b)) {}
  ExprPtr test, then_value, else_value;
};

struct Stmt {
  enum class Kind { Text, Output, If, For, Set, SetBlock, Macro, Break, Continue, Scope, FilterBlock };
  Stmt(Kind k, int l) : kind(k), line(l) {}
  virtual ~Stmt() = default;
  Kind kind;
  int line;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct TextStmt : Stmt {
  TextStmt(int l, std::string t) : Stmt(Kind::Text, l), text(std::move(t)) {}
  std::string text;
};

struct OutputStmt : Stmt {
  OutputStmt(int l, ExprPtr e) : Stmt(Kind::Output, l), expr(std::move(e)) {}
  ExprPtr expr;
};

struct IfStmt : Stmt {
  explicit IfStmt(int l) : Stmt(Kind::If, l) {}
  std::vector<std::pair<ExprPtr, Body>> branches;  // if, then each elif
  Body else_body;
};

struct ForStmt : Stmt {
  explicit ForStmt(int l) : Stmt(Kind::For, l) {}
  std::vector<std::string> targets;  // several: unpack each item
  ExprPtr iterable;
  ExprPtr filter;  // `for x in xs if cond`, may be null
  Body body;
  Body else_body;  // runs when no item was iterated
};

// Target of set/with: one name, several names to unpack, or `ns.attr`.
struct AssignTarget {
  std::vector<std::string> names;
  std::string attribute;  // non-empty: names[0] is a namespace and this its attribute
};

struct SetStmt : Stmt {
  explicit SetStmt(int l) : Stmt(Kind::Set, l) {}
  AssignTarget target;
  ExprPtr value;
};

struct FilterCall {
  int line;
  std::string name;
  Arguments args;
};

struct SetBlockStmt : Stmt {  // {% set x %}...{% endset %}
  explicit SetBlockStmt(int l) : Stmt(Kind::SetBlock, l) {}
  AssignTarget target;
  std::vector<FilterCall> filters;
  Body body;
};

struct MacroStmt : Stmt {
  explicit MacroStmt(int l) : Stmt(Kind::Macro, l) {}
  std::string name;
  std::vector<std::pair<std::string, ExprPtr>> params;  // default may be null
  Body body;
};

struct LoopControlStmt : Stmt {  // break / continue (jinja2.ext.loopcontrols)
  LoopControlStmt(int l, Kind k) : Stmt(k, l) {}
};

// A body run in its own scope: `{% with a = 1 %}` and HF's `{% generation %}`.
struct ScopeStmt : Stmt {
  explicit ScopeStmt(int l) : Stmt(Kind::Scope, l) {}
  std::vector<std::pair<AssignTarget, ExprPtr>> assignments;
  Body body;
};

struct FilterBlockStmt : Stmt {  // {% filter upper %}...{% endfilter %}
  explicit FilterBlockStmt(int l) : Stmt(Kind::FilterBlock, l) {}
  std::vector<FilterCall> filters;
  Body body;
};

}  // namespace roll::jinja
