#include "roll/jinja/parser.h"

#include <algorithm>
#include <initializer_list>
#include <string_view>

#include "roll/jinja/error.h"

namespace roll::jinja {

namespace {

using Names = std::initializer_list<std::string_view>;

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, const std::string& name) : toks_(tokens), name_(name) {}

  Body parse_template() {
    Body body = subparse({});
    if (peek().type != TokenType::End) fail("unexpected '" + describe(peek()) + "'");
    return body;
  }

 private:
  // ---- token stream ----
  const Token& peek(std::size_t ahead = 0) const { return toks_[std::min(pos_ + ahead, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  bool is_op(std::string_view op, std::size_t ahead = 0) const {
    const Token& t = peek(ahead);
    return t.type == TokenType::Operator && t.text == op;
  }
  bool is_name(std::string_view n, std::size_t ahead = 0) const {
    const Token& t = peek(ahead);
    return t.type == TokenType::Name && t.text == n;
  }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  [[noreturn]] void fail(const std::string& message) const { throw TemplateError(name_, peek().line, message); }
  static std::string describe(const Token& t) {
    switch (t.type) {
      case TokenType::Data: return "template data";
      case TokenType::VariableBegin: return "{{";
      case TokenType::VariableEnd: return "end of print statement";
      case TokenType::BlockBegin: return "{%";
      case TokenType::BlockEnd: return "end of statement block";
      case TokenType::End: return "end of template";
      default: return t.text;
    }
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) fail("expected '" + std::string(op) + "', got '" + describe(peek()) + "'");
  }
  std::string expect_name() {
    if (peek().type != TokenType::Name) fail("expected a name, got '" + describe(peek()) + "'");
    return next().text;
  }
  void expect_block_end() {
    if (peek().type != TokenType::BlockEnd) fail("expected end of statement block, got '" + describe(peek()) + "'");
    next();
  }

  // ---- statements ----

  // Parses until a `{% name %}` tag with a name in `end`; returns with the stream on that name.
  Body subparse(Names end) {
    Body body;
    while (true) {
      const Token& t = peek();
      if (t.type == TokenType::Data) {
        body.push_back(std::make_unique<TextStmt>(t.line, t.text));
        next();
      } else if (t.type == TokenType::VariableBegin) {
        const int line = next().line;
        ExprPtr e = parse_tuple(true, false);
        if (peek().type != TokenType::VariableEnd) fail("expected end of print statement, got '" + describe(peek()) + "'");
        next();
        body.push_back(std::make_unique<OutputStmt>(line, std::move(e)));
      } else if (t.type == TokenType::BlockBegin) {
        const Token& n = peek(1);
        if (n.type == TokenType::Name && std::find(end.begin(), end.end(), n.text) != end.end()) {
          next();
          return body;
        }
        next();
        body.push_back(parse_statement());
      } else if (t.type == TokenType::End) {
        if (end.size()) {
          std::string names;
          for (auto n : end) names += (names.empty() ? "'" : " or '") + std::string(n) + "'";
          fail("unexpected end of template, expected " + names);
        }
        return body;
      } else {
        fail("unexpected '" + describe(t) + "'");
      }
    }
  }

  StmtPtr parse_statement() {
    if (peek().type != TokenType::Name) fail("tag name expected");
    const std::string tag = peek().text;
    if (tag == "for") return parse_for();
    if (tag == "if") return parse_if();
    if (tag == "set") return parse_set();
    if (tag == "macro") return parse_macro();
    if (tag == "with") return parse_with();
    if (tag == "filter") return parse_filter_block();
    if (tag == "generation") return parse_scope_tag("endgeneration");
    if (tag == "break" || tag == "continue") {
      const int line = next().line;
      if (loop_depth_ == 0) fail("'" + tag + "' outside of a loop");
      expect_block_end();
      return std::make_unique<LoopControlStmt>(line, tag == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue);
    }
    if (tag == "print") {
      const int line = next().line;
      ExprPtr e = parse_tuple(true, false);
      expect_block_end();
      return std::make_unique<OutputStmt>(line, std::move(e));
    }
    if (tag == "extends" || tag == "include" || tag == "import" || tag == "from" || tag == "block" || tag == "call" ||
        tag == "do" || tag == "autoescape" || tag == "trans")
      fail("the '" + tag + "' tag is not supported by this renderer (chat templates do not need it)");
    fail("Encountered unknown tag '" + tag + "'");
  }

  // The name after `{%` of a closing tag, consumed with its `%}`.
  void close(std::string_view end_name) {
    if (!skip_name(end_name)) fail("expected '" + std::string(end_name) + "'");
    expect_block_end();
  }

  AssignTarget parse_assign_target(bool allow_attribute) {
    AssignTarget target;
    const bool parens = skip_op("(");
    target.names.push_back(expect_name());
    if (allow_attribute && !parens && is_op(".")) {
      next();
      target.attribute = expect_name();
      return target;
    }
    while (skip_op(",")) {
      if (peek().type != TokenType::Name) break;  // trailing comma
      target.names.push_back(expect_name());
    }
    if (parens) expect_op(")");
    return target;
  }

  StmtPtr parse_for() {
    auto node = std::make_unique<ForStmt>(next().line);
    node->targets = parse_assign_target(false).names;
    if (!skip_name("in")) fail("expected 'in' in for loop");
    node->iterable = parse_tuple(false, false, {"recursive"});
    if (skip_name("if")) node->filter = parse_expression(true);
    if (is_name("recursive")) fail("recursive loops are not supported by this renderer");
    expect_block_end();
    ++loop_depth_;
    node->body = subparse({"endfor", "else"});
    --loop_depth_;
    if (skip_name("else")) {
      expect_block_end();
      node->else_body = subparse({"endfor"});
    }
    close("endfor");
    return node;
  }

  StmtPtr parse_if() {
    auto node = std::make_unique<IfStmt>(next().line);
    ExprPtr test = parse_tuple(false, false);
    expect_block_end();
    Body body = subparse({"elif", "else", "endif"});
    node->branches.emplace_back(std::move(test), std::move(body));
    while (true) {
      if (skip_name("elif")) {
        ExprPtr t = parse_tuple(false, false);
        expect_block_end();
        Body b = subparse({"elif", "else", "endif"});
        node->branches.emplace_back(std::move(t), std::move(b));
      } else if (skip_name("else")) {
        expect_block_end();
        node->else_body = subparse({"endif"});
        close("endif");
        break;
      } else {
        close("endif");
        break;
      }
    }
    return node;
  }

  std::vector<FilterCall> parse_filter_chain(bool leading_pipe) {
    std::vector<FilterCall> filters;
    bool first = true;
    while ((first && !leading_pipe) || skip_op("|")) {
      first = false;
      FilterCall call{peek().line, parse_dotted_name(), {}};
      if (skip_op("(")) call.args = parse_call_args();
      filters.push_back(std::move(call));
    }
    return filters;
  }

  StmtPtr parse_set() {
    const int line = next().line;
    AssignTarget target = parse_assign_target(true);
    if (skip_op("=")) {
      auto node = std::make_unique<SetStmt>(line);
      node->target = std::move(target);
      node->value = parse_tuple(true, false);
      expect_block_end();
      return node;
    }
    auto node = std::make_unique<SetBlockStmt>(line);
    node->target = std::move(target);
    if (is_op("|")) node->filters = parse_filter_chain(true);
    expect_block_end();
    node->body = subparse({"endset"});
    close("endset");
    return node;
  }

  StmtPtr parse_macro() {
    auto node = std::make_unique<MacroStmt>(next().line);
    node->name = expect_name();
    expect_op("(");
    while (!is_op(")")) {
      if (!node->params.empty()) expect_op(",");
      if (is_op(")")) break;
      std::string param = expect_name();
      ExprPtr dflt;
      if (skip_op("=")) dflt = parse_expression(true);
      node->params.emplace_back(std::move(param), std::move(dflt));
    }
    next();
    expect_block_end();
    const int saved = loop_depth_;
    loop_depth_ = 0;
    node->body = subparse({"endmacro"});
    loop_depth_ = saved;
    close("endmacro");
    return node;
  }

  StmtPtr parse_with() {
    auto node = std::make_unique<ScopeStmt>(next().line);
    while (peek().type != TokenType::BlockEnd) {
      if (!node->assignments.empty()) expect_op(",");
      AssignTarget target = parse_assign_target(false);
      expect_op("=");
      node->assignments.emplace_back(std::move(target), parse_expression(true));
    }
    expect_block_end();
    node->body = subparse({"endwith"});
    close("endwith");
    return node;
  }

  StmtPtr parse_scope_tag(std::string_view end_name) {
    auto node = std::make_unique<ScopeStmt>(next().line);
    expect_block_end();
    node->body = subparse({end_name});
    close(end_name);
    return node;
  }

  StmtPtr parse_filter_block() {
    auto node = std::make_unique<FilterBlockStmt>(next().line);
    node->filters = parse_filter_chain(false);
    expect_block_end();
    node->body = subparse({"endfilter"});
    close("endfilter");
    return node;
  }

  // ---- expressions ----

  bool is_tuple_end(Names extra_end) const {
    const Token& t = peek();
    if (t.type == TokenType::VariableEnd || t.type == TokenType::BlockEnd || t.type == TokenType::End) return true;
    if (is_op(")")) return true;
    for (auto n : extra_end)
      if (is_name(n)) return true;
    return false;
  }

  // Comma-separated expressions become a tuple (a list here).
  ExprPtr parse_tuple(bool with_condexpr, bool explicit_parens, Names extra_end = {}) {
    const int line = peek().line;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (is_tuple_end(extra_end)) break;
      items.push_back(with_condexpr ? parse_expression(true) : parse_or());
      if (is_op(","))
        is_tuple = true;
      else
        break;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parens) fail("Expected an expression, got '" + describe(peek()) + "'");
    }
    auto list = std::make_unique<ListExpr>(line, true);
    list->items = std::move(items);
    return list;
  }

  ExprPtr parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

  ExprPtr parse_condexpr() {
    const int line = peek().line;
    ExprPtr expr = parse_or();
    while (skip_name("if")) {
      ExprPtr test = parse_or();
      ExprPtr otherwise;
      if (skip_name("else")) otherwise = parse_condexpr();
      expr = std::make_unique<ConditionExpr>(line, std::move(test), std::move(expr), std::move(otherwise));
    }
    return expr;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      const int line = next().line;
      left = std::make_unique<BinaryExpr>(line, BinaryExpr::Op::Or, std::move(left), parse_and());
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      const int line = next().line;
      left = std::make_unique<BinaryExpr>(line, BinaryExpr::Op::And, std::move(left), parse_not());
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      const int line = next().line;
      return std::make_unique<UnaryExpr>(line, UnaryExpr::Op::Not, parse_not());
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = peek().line;
    ExprPtr first = parse_math1();
    std::unique_ptr<CompareExpr> cmp;
    auto add = [&](CompareExpr::Op op) {
      if (!cmp) cmp = std::make_unique<CompareExpr>(line, std::move(first));
      cmp->rest.emplace_back(op, parse_math1());
    };
    while (true) {
      static const std::pair<std::string_view, CompareExpr::Op> ops[] = {
          {"==", CompareExpr::Op::Eq}, {"!=", CompareExpr::Op::Ne}, {"<", CompareExpr::Op::Lt},
          {"<=", CompareExpr::Op::Le}, {">", CompareExpr::Op::Gt},  {">=", CompareExpr::Op::Ge}};
      bool matched = false;
      for (const auto& [text, op] : ops) {
        if (is_op(text)) {
          next();
          add(op);
          matched = true;
          break;
        }
      }
      if (matched) continue;
      if (skip_name("in")) {
        add(CompareExpr::Op::In);
      } else if (is_name("not") && is_name("in", 1)) {
        next();
        next();
        add(CompareExpr::Op::NotIn);
      } else {
        break;
      }
    }
    if (cmp) return cmp;
    return first;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& t = next();
      const auto op = t.text == "+" ? BinaryExpr::Op::Add : BinaryExpr::Op::Sub;
      left = std::make_unique<BinaryExpr>(t.line, op, std::move(left), parse_concat());
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (is_op("~")) {
      const int line = next().line;
      left = std::make_unique<BinaryExpr>(line, BinaryExpr::Op::Concat, std::move(left), parse_math2());
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& t = next();
      const auto op = t.text == "*"    ? BinaryExpr::Op::Mul
                      : t.text == "/"  ? BinaryExpr::Op::Div
                      : t.text == "//" ? BinaryExpr::Op::FloorDiv
                                       : BinaryExpr::Op::Mod;
      left = std::make_unique<BinaryExpr>(t.line, op, std::move(left), parse_pow());
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      const int line = next().line;
      left = std::make_unique<BinaryExpr>(line, BinaryExpr::Op::Pow, std::move(left), parse_unary(true));
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    const int line = peek().line;
    ExprPtr node;
    if (skip_op("-")) {
      node = std::make_unique<UnaryExpr>(line, UnaryExpr::Op::Neg, parse_unary(false));
    } else if (skip_op("+")) {
      node = std::make_unique<UnaryExpr>(line, UnaryExpr::Op::Pos, parse_unary(false));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = peek();
    const int line = t.line;
    switch (t.type) {
      case TokenType::Name: {
        next();
        if (t.text == "true" || t.text == "True") return std::make_unique<LiteralExpr>(line, Value(true));
        if (t.text == "false" || t.text == "False") return std::make_unique<LiteralExpr>(line, Value(false));
        if (t.text == "none" || t.text == "None") return std::make_unique<LiteralExpr>(line, Value::none());
        return std::make_unique<NameExpr>(line, t.text);
      }
      case TokenType::String: {
        std::string s;
        while (peek().type == TokenType::String) s += next().text;  // adjacent literals join
        return std::make_unique<LiteralExpr>(line, Value(std::move(s)));
      }
      case TokenType::Integer: next(); return std::make_unique<LiteralExpr>(line, Value(t.int_value));
      case TokenType::Float: next(); return std::make_unique<LiteralExpr>(line, Value(t.float_value));
      default: break;
    }
    if (skip_op("(")) {
      ExprPtr e = parse_tuple(true, true);
      expect_op(")");
      return e;
    }
    if (skip_op("[")) {
      auto list = std::make_unique<ListExpr>(line);
      while (!is_op("]")) {
        if (!list->items.empty()) expect_op(",");
        if (is_op("]")) break;
        list->items.push_back(parse_expression(true));
      }
      next();
      return list;
    }
    if (skip_op("{")) {
      auto dict = std::make_unique<DictExpr>(line);
      while (!is_op("}")) {
        if (!dict->items.empty()) expect_op(",");
        if (is_op("}")) break;
        ExprPtr key = parse_expression(true);
        expect_op(":");
        dict->items.emplace_back(std::move(key), parse_expression(true));
      }
      next();
      return dict;
    }
    fail("unexpected '" + describe(t) + "'");
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".")) {
        const int line = next().line;
        const Token& t = peek();
        if (t.type == TokenType::Name) {
          node = std::make_unique<GetAttrExpr>(line, std::move(node), next().text);
        } else if (t.type == TokenType::Integer) {
          node = std::make_unique<GetItemExpr>(line, std::move(node), std::make_unique<LiteralExpr>(line, Value(next().int_value)));
        } else {
          fail("expected name or number after '.'");
        }
      } else if (is_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr object) {
    const int line = next().line;  // '['
    ExprPtr first;
    if (!is_op(":")) {
      first = parse_expression(true);
      if (!is_op(":")) {
        expect_op("]");
        return std::make_unique<GetItemExpr>(line, std::move(object), std::move(first));
      }
    }
    auto slice = std::make_unique<SliceExpr>(line, std::move(object));
    slice->start = std::move(first);
    next();  // ':'
    if (!is_op(":") && !is_op("]")) slice->stop = parse_expression(true);
    if (skip_op(":")) {
      if (!is_op("]")) slice->step = parse_expression(true);
    }
    expect_op("]");
    return slice;
  }

  Arguments parse_call_args() {  // after '(' up to and including ')'
    Arguments args;
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (is_op("*") || is_op("**")) fail("*args and **kwargs in calls are not supported by this renderer");
      if (peek().type == TokenType::Name && is_op("=", 1)) {
        std::string key = next().text;
        next();
        args.keyword.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!args.keyword.empty()) fail("invalid syntax for function call expression");
        args.positional.push_back(parse_expression(true));
      }
    }
    next();
    return args;
  }

  ExprPtr parse_call(ExprPtr callee) {
    const int line = next().line;  // '('
    auto call = std::make_unique<CallExpr>(line, std::move(callee));
    call->args = parse_call_args();
    return call;
  }

  std::string parse_dotted_name() {
    std::string name = expect_name();
    while (skip_op(".")) name += "." + expect_name();
    return name;
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        const int line = next().line;
        auto f = std::make_unique<FilterExpr>(line, std::move(node), parse_dotted_name());
        if (skip_op("(")) f->args = parse_call_args();
        node = std::move(f);
      } else if (is_name("is")) {
        const int line = next().line;
        const bool negated = skip_name("not");
        auto t = std::make_unique<TestExpr>(line, std::move(node), parse_dotted_name(), negated);
        const Token& a = peek();
        if (skip_op("(")) {
          t->args = parse_call_args();
        } else if ((a.type == TokenType::Name || a.type == TokenType::String || a.type == TokenType::Integer ||
                    a.type == TokenType::Float || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
          // One bare argument, as in `x is divisibleby 3` or `x is sameas false`.
          if (is_name("is")) fail("You cannot chain multiple tests with is");
          t->args.positional.push_back(parse_postfix(parse_primary()));
        }
        node = std::move(t);
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  const std::vector<Token>& toks_;
  const std::string& name_;
  std::size_t pos_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse(const std::vector<Token>& tokens, const std::string& template_name) {
  return Parser(tokens, template_name).parse_template();
}

}  // namespace roll::jinja
