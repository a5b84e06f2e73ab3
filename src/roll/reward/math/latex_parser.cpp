// Recursive-descent parser for answer LaTeX (see latex_parser.h). Precedence, loosest first:
// list (',' ';') < relation (= < \le \in ...) < union (\cup) < sum (+ - \pm) < product (\cdot \times
// / \div, juxtaposition) < sign < postfix (^ _ ! %) < atom.
#include "roll/reward/math/latex_parser.h"

#include <algorithm>
#include <initializer_list>

namespace roll::reward {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

bool in_list(std::string_view name, std::initializer_list<std::string_view> list) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

bool is_function(std::string_view n) {
  return in_list(n, {"sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "arccot", "sinh",
                     "cosh", "tanh", "ln", "log", "lg", "exp", "asin", "acos", "atan"});
}

bool is_greek(std::string_view n) {
  return in_list(n, {"alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta",
                     "vartheta", "iota", "kappa", "lambda", "mu", "nu", "xi", "rho", "sigma", "tau", "upsilon",
                     "phi", "varphi", "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Sigma",
                     "Upsilon", "Phi", "Psi", "Omega"});
}

struct Token {
  enum class Type : unsigned char { kEnd, kNumber, kLetter, kCommand, kChar };
  Type type = Type::kEnd;
  std::string_view text;  // command name without the backslash; "{" / "}" for \{ \}
  std::size_t pos = 0;
};

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  Token peek() {
    if (!has_peek_) {
      peeked_ = lex();
      has_peek_ = true;
    }
    return peeked_;
  }
  Token next() {
    Token t = peek();
    has_peek_ = false;
    return t;
  }
  // "x^23" is x^2 * 3 and "\frac12" is 1/2: a script or \frac argument without braces takes one
  // character of a number token.
  Token next_single_digit() {
    Token t = peek();
    has_peek_ = false;
    if (t.type == Token::Type::kNumber && t.text.size() > 1 && is_digit(t.text[0])) {
      pos_ = t.pos + 1;
      t.text = t.text.substr(0, 1);
    }
    return t;
  }

 private:
  Token lex() {
    while (pos_ < s_.size() && is_space(s_[pos_])) ++pos_;
    Token t;
    t.pos = pos_;
    if (pos_ >= s_.size()) return t;
    const char c = s_[pos_];
    if (is_digit(c) || (c == '.' && pos_ + 1 < s_.size() && is_digit(s_[pos_ + 1]))) {
      std::size_t e = pos_;
      while (e < s_.size() && is_digit(s_[e])) ++e;
      if (e + 1 < s_.size() && s_[e] == '.' && is_digit(s_[e + 1])) {
        ++e;
        while (e < s_.size() && is_digit(s_[e])) ++e;
      } else if (e < s_.size() && s_[e] == '.' && e > pos_ && !(e + 1 < s_.size() && s_[e + 1] == '.')) {
        ++e;  // "5." is 5
      }
      // Scientific notation "1.5e3", "2E-4" (a following digit is required: "2e" is 2*e).
      if (e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
        std::size_t k = e + 1;
        if (k < s_.size() && (s_[k] == '+' || s_[k] == '-')) ++k;
        if (k < s_.size() && is_digit(s_[k])) {
          while (k < s_.size() && is_digit(s_[k])) ++k;
          e = k;
        }
      }
      t.type = Token::Type::kNumber;
      t.text = s_.substr(pos_, e - pos_);
      pos_ = e;
      return t;
    }
    if (is_alpha(c)) {
      t.type = Token::Type::kLetter;
      t.text = s_.substr(pos_, 1);
      ++pos_;
      return t;
    }
    if (c == '\\' && pos_ + 1 < s_.size()) {
      if (is_alpha(s_[pos_ + 1])) {
        std::size_t e = pos_ + 1;
        while (e < s_.size() && is_alpha(s_[e])) ++e;
        t.type = Token::Type::kCommand;
        t.text = s_.substr(pos_ + 1, e - pos_ - 1);
        pos_ = e;
        return t;
      }
      t.type = Token::Type::kCommand;
      t.text = s_.substr(pos_ + 1, 1);  // \{ \} \| ...
      pos_ += 2;
      return t;
    }
    if (c == '*' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '*') {  // Python's ** in plain text
      t.type = Token::Type::kChar;
      t.text = "^";
      pos_ += 2;
      return t;
    }
    if ((c == '<' || c == '>') && pos_ + 1 < s_.size() && s_[pos_ + 1] == '=') {
      t.type = Token::Type::kCommand;
      t.text = c == '<' ? "le" : "ge";
      pos_ += 2;
      return t;
    }
    t.type = Token::Type::kChar;
    t.text = s_.substr(pos_, 1);
    ++pos_;
    return t;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  Token peeked_;
  bool has_peek_ = false;
};

bool is_char(const Token& t, char c) { return t.type == Token::Type::kChar && t.text.size() == 1 && t.text[0] == c; }
bool is_cmd(const Token& t, std::string_view name) { return t.type == Token::Type::kCommand && t.text == name; }

LatexNode make(LatexNode::Kind k, std::vector<LatexNode> kids = {}, std::string text = {}) {
  LatexNode n;
  n.kind = k;
  n.kids = std::move(kids);
  n.text = std::move(text);
  return n;
}

class Parser {
 public:
  explicit Parser(std::string_view s) : lex_(s) {}

  LatexNode parse_all() {
    LatexNode n = parse_list();
    Token t = lex_.peek();
    if (t.type != Token::Type::kEnd) fail("unexpected '" + std::string(t.text) + "'", t);
    return n;
  }

 private:
  struct DepthGuard {
    explicit DepthGuard(int& d) : d_(d) {
      if (++d_ > kMaxLatexDepth) throw MathRefused("expression nested deeper than " + std::to_string(kMaxLatexDepth));
    }
    ~DepthGuard() { --d_; }
    int& d_;
  };

  [[noreturn]] void fail(const std::string& what, const Token& t) {
    throw LatexParseError(what + " at offset " + std::to_string(t.pos));
  }

  void expect_char(char c) {
    Token t = lex_.next();
    if (!is_char(t, c)) fail(std::string("expected '") + c + "'", t);
  }

  bool is_list_sep(const Token& t) { return is_char(t, ',') || is_char(t, ';'); }

  bool is_closer(const Token& t) {
    return is_char(t, ')') || is_char(t, ']') || is_char(t, '}') || is_cmd(t, "}") || is_cmd(t, "rangle");
  }

  LatexNode parse_list() {
    DepthGuard g(depth_);
    std::vector<LatexNode> items;
    items.push_back(parse_relation());
    while (is_list_sep(lex_.peek())) {
      lex_.next();
      Token t = lex_.peek();
      if (t.type == Token::Type::kEnd || is_closer(t)) break;  // trailing comma
      items.push_back(parse_relation());
    }
    if (items.size() == 1) return std::move(items[0]);
    return make(LatexNode::Kind::kList, std::move(items));
  }

  static const char* relation_op(const Token& t) {
    if (is_char(t, '=')) return "=";
    if (is_char(t, '<') || is_cmd(t, "lt")) return "<";
    if (is_char(t, '>') || is_cmd(t, "gt")) return ">";
    if (t.type != Token::Type::kCommand) return nullptr;
    if (in_list(t.text, {"le", "leq", "leqslant", "leqq"})) return "<=";
    if (in_list(t.text, {"ge", "geq", "geqslant", "geqq"})) return ">=";
    if (in_list(t.text, {"ne", "neq"})) return "!=";
    if (in_list(t.text, {"approx", "equiv", "coloneqq"})) return "=";
    if (t.text == "in") return "in";
    return nullptr;
  }

  LatexNode parse_relation() {
    std::vector<LatexNode> operands;
    std::string ops;
    operands.push_back(parse_union());
    while (const char* op = relation_op(lex_.peek())) {
      lex_.next();
      if (!ops.empty()) ops += ' ';
      ops += op;
      operands.push_back(parse_union());
    }
    if (operands.size() == 1) return std::move(operands[0]);
    return make(LatexNode::Kind::kRelation, std::move(operands), ops);
  }

  LatexNode parse_union() {
    std::vector<LatexNode> parts;
    parts.push_back(parse_sum());
    while (is_cmd(lex_.peek(), "cup")) {
      lex_.next();
      parts.push_back(parse_sum());
    }
    if (parts.size() == 1) return std::move(parts[0]);
    return make(LatexNode::Kind::kUnion, std::move(parts));
  }

  LatexNode parse_sum() {
    DepthGuard g(depth_);
    Token t = lex_.peek();
    LatexNode acc;
    if (is_char(t, '-')) {
      lex_.next();
      acc = make(LatexNode::Kind::kNeg, {parse_term()});
    } else if (is_cmd(t, "pm") || is_cmd(t, "mp")) {
      lex_.next();
      acc = make(LatexNode::Kind::kPlusMinus, {parse_term()});
    } else {
      if (is_char(t, '+')) lex_.next();
      acc = parse_term();
    }
    std::vector<LatexNode> terms;
    terms.push_back(std::move(acc));
    for (;;) {
      Token op = lex_.peek();
      if (is_char(op, '+')) {
        lex_.next();
        terms.push_back(parse_term());
      } else if (is_char(op, '-')) {
        lex_.next();
        terms.push_back(make(LatexNode::Kind::kNeg, {parse_term()}));
      } else if (is_cmd(op, "pm") || is_cmd(op, "mp")) {
        lex_.next();
        LatexNode left = terms.size() == 1 ? std::move(terms[0]) : make(LatexNode::Kind::kAdd, std::move(terms));
        terms.clear();
        terms.push_back(make(LatexNode::Kind::kPlusMinus, {std::move(left), parse_term()}));
      } else {
        break;
      }
    }
    if (terms.size() == 1) return std::move(terms[0]);
    return make(LatexNode::Kind::kAdd, std::move(terms));
  }

  bool starts_atom(const Token& t) {
    switch (t.type) {
      case Token::Type::kNumber:
      case Token::Type::kLetter:
        return true;
      case Token::Type::kCommand:
        return in_list(t.text, {"frac", "sqrt", "binom", "choose", "pi", "infty", "infin", "{", "langle", "word"}) ||
               is_function(t.text) || is_greek(t.text);
      case Token::Type::kChar:
        return is_char(t, '(') || is_char(t, '{') || (is_char(t, '|') && abs_depth_ == 0);
      default:
        return false;
    }
  }

  static bool is_integer_literal(const LatexNode& n) {
    return n.kind == LatexNode::Kind::kNumber && std::all_of(n.text.begin(), n.text.end(), is_digit);
  }

  LatexNode parse_term() {
    DepthGuard g(depth_);
    LatexNode acc = parse_factor();
    // Mixed number: an integer followed by \frac of two integers ("3\frac{1}{2}" = 7/2).
    if (is_integer_literal(acc) && is_cmd(lex_.peek(), "frac")) {
      LatexNode frac = parse_factor();
      if (frac.kind == LatexNode::Kind::kDiv && is_integer_literal(frac.kids[0]) && is_integer_literal(frac.kids[1])) {
        acc = make(LatexNode::Kind::kAdd, {std::move(acc), std::move(frac)});
      } else {
        acc = make(LatexNode::Kind::kMul, {std::move(acc), std::move(frac)});
      }
    }
    for (;;) {
      Token t = lex_.peek();
      if (is_char(t, '*') || is_cmd(t, "cdot") || is_cmd(t, "times") || is_cmd(t, "ast")) {
        lex_.next();
        acc = make(LatexNode::Kind::kMul, {std::move(acc), parse_signed_factor()});
      } else if (is_char(t, '/') || is_cmd(t, "div") || is_cmd(t, "over")) {
        lex_.next();
        acc = make(LatexNode::Kind::kDiv, {std::move(acc), parse_signed_factor()});
      } else if (starts_atom(t)) {
        acc = make(LatexNode::Kind::kMul, {std::move(acc), parse_factor()});
      } else {
        return acc;
      }
    }
  }

  LatexNode parse_signed_factor() {
    DepthGuard g(depth_);
    Token t = lex_.peek();
    if (is_char(t, '-')) {
      lex_.next();
      return make(LatexNode::Kind::kNeg, {parse_signed_factor()});
    }
    if (is_char(t, '+')) {
      lex_.next();
      return parse_signed_factor();
    }
    return parse_factor();
  }

  LatexNode parse_factor() {
    DepthGuard g(depth_);
    LatexNode acc = parse_atom();
    for (;;) {
      Token t = lex_.peek();
      if (is_char(t, '^')) {
        lex_.next();
        acc = make(LatexNode::Kind::kPow, {std::move(acc), parse_script_arg()});
      } else if (is_char(t, '_')) {
        lex_.next();
        LatexNode sub = parse_script_arg();
        if (acc.kind != LatexNode::Kind::kSymbol) fail("subscript on a non-symbol", t);
        acc.text += "_" + to_string(sub);
      } else if (is_char(t, '\'')) {
        lex_.next();
        if (acc.kind != LatexNode::Kind::kSymbol) fail("prime on a non-symbol", t);
        acc.text += "'";
      } else if (is_char(t, '!')) {
        lex_.next();
        acc = make(LatexNode::Kind::kFactorial, {std::move(acc)});
      } else if (is_char(t, '%')) {
        lex_.next();
        acc = make(LatexNode::Kind::kPercent, {std::move(acc)});
      } else {
        return acc;
      }
    }
  }

  // The argument of ^, _, \frac, \sqrt, \binom without braces is one character or one command.
  LatexNode parse_script_arg() {
    DepthGuard g(depth_);
    Token t = lex_.peek();
    if (is_char(t, '{')) {
      lex_.next();
      LatexNode inner = parse_list();
      expect_char('}');
      return inner;
    }
    if (is_char(t, '-')) {
      lex_.next();
      return make(LatexNode::Kind::kNeg, {parse_script_arg()});
    }
    if (t.type == Token::Type::kNumber) {
      Token d = lex_.next_single_digit();
      return make(LatexNode::Kind::kNumber, {}, std::string(d.text));
    }
    if (t.type == Token::Type::kLetter || t.type == Token::Type::kCommand || is_char(t, '(')) return parse_atom();
    fail("missing argument", t);
  }

  LatexNode parse_group(const Token& open) {
    DepthGuard g(depth_);
    const bool set_braces = is_cmd(open, "{");
    const bool plain_braces = is_char(open, '{');
    char open_c = set_braces || plain_braces ? '{' : is_cmd(open, "langle") ? '(' : open.text[0];
    std::vector<LatexNode> items;
    Token t = lex_.peek();
    if (!is_closer(t)) {
      LatexNode l = parse_list();
      if (l.kind == LatexNode::Kind::kList) {
        items = std::move(l.kids);
      } else {
        items.push_back(std::move(l));
      }
    }
    Token close = lex_.next();
    char close_c;
    if (is_char(close, ')') || is_cmd(close, "rangle")) {
      close_c = ')';
    } else if (is_char(close, ']')) {
      close_c = ']';
    } else if (is_char(close, '}') || is_cmd(close, "}")) {
      close_c = '}';
    } else {
      fail("unclosed bracket", close);
    }
    if (set_braces || plain_braces) {
      if (close_c != '}' || (set_braces != is_cmd(close, "}"))) fail("mismatched braces", close);
      if (plain_braces && items.size() == 1) return std::move(items[0]);
      return make(LatexNode::Kind::kGroup, std::move(items), "{}");
    }
    if (close_c == '}') fail("mismatched bracket", close);
    if (items.empty()) fail("empty brackets", close);
    if (items.size() == 1) {
      if (open_c != '(' && open_c != '[') fail("bad bracket", open);
      if ((open_c == '(') != (close_c == ')')) fail("half-open bracket around one item", close);
      return std::move(items[0]);
    }
    return make(LatexNode::Kind::kGroup, std::move(items), std::string{open_c, close_c});
  }

  // A function argument without parentheses: juxtaposed atoms ("\sin 2x" is sin(2x)).
  LatexNode parse_function_argument() {
    DepthGuard g(depth_);
    Token t = lex_.peek();
    if (is_char(t, '(') || is_char(t, '{')) return parse_factor();
    LatexNode acc = parse_factor();
    for (;;) {
      Token n = lex_.peek();
      if (!starts_atom(n) || (n.type == Token::Type::kCommand && is_function(n.text))) return acc;
      acc = make(LatexNode::Kind::kMul, {std::move(acc), parse_factor()});
    }
  }

  LatexNode parse_atom() {
    DepthGuard g(depth_);
    Token t = lex_.next();
    switch (t.type) {
      case Token::Type::kEnd:
        fail("unexpected end", t);
      case Token::Type::kNumber:
        return make(LatexNode::Kind::kNumber, {}, std::string(t.text));
      case Token::Type::kLetter:
        return make(LatexNode::Kind::kSymbol, {}, std::string(t.text));
      case Token::Type::kChar:
        if (is_char(t, '(') || is_char(t, '[') || is_char(t, '{')) return parse_group(t);
        if (is_char(t, '|')) {
          ++abs_depth_;
          LatexNode inner = parse_sum();
          --abs_depth_;
          expect_char('|');
          return make(LatexNode::Kind::kAbs, {std::move(inner)});
        }
        fail("unexpected '" + std::string(t.text) + "'", t);
      case Token::Type::kCommand:
        break;
    }
    const std::string_view name = t.text;
    if (name == "{" || name == "langle") return parse_group(t);
    if (name == "word") {  // normalize_latex's spelling of a \text word: one symbol
      expect_char('{');
      std::string word = "word:";
      for (Token l = lex_.next(); !is_char(l, '}'); l = lex_.next()) {
        if (l.type != Token::Type::kLetter) fail("bad word", l);
        word += l.text;
      }
      return make(LatexNode::Kind::kSymbol, {}, word);
    }
    if (name == "frac") {
      LatexNode num = parse_script_arg();
      LatexNode den = parse_script_arg();
      return make(LatexNode::Kind::kDiv, {std::move(num), std::move(den)});
    }
    if (name == "binom" || name == "choose") {
      LatexNode n = parse_script_arg();
      LatexNode k = parse_script_arg();
      return make(LatexNode::Kind::kBinom, {std::move(n), std::move(k)});
    }
    if (name == "sqrt") {
      std::vector<LatexNode> kids;
      LatexNode index;
      bool has_index = false;
      if (is_char(lex_.peek(), '[')) {
        lex_.next();
        index = parse_sum();
        expect_char(']');
        has_index = true;
      }
      kids.push_back(parse_script_arg());
      if (has_index) kids.push_back(std::move(index));
      return make(LatexNode::Kind::kRoot, std::move(kids));
    }
    if (name == "pi" || name == "infty" || name == "infin" || is_greek(name))
      return make(LatexNode::Kind::kSymbol, {}, name == "infin" ? "infty" : std::string(name));
    if (is_function(name)) {
      // \sin^2 x, \sin^{-1} x, \log_2 x, \log_{10}(x)
      LatexNode power, base;
      bool has_power = false, has_base = false;
      for (;;) {
        Token s = lex_.peek();
        if (is_char(s, '^') && !has_power) {
          lex_.next();
          power = parse_script_arg();
          has_power = true;
        } else if (is_char(s, '_') && !has_base) {
          lex_.next();
          base = parse_script_arg();
          has_base = true;
        } else {
          break;
        }
      }
      std::string fname(name);
      const bool inverse = has_power && power.kind == LatexNode::Kind::kNeg && power.kids[0].kind == LatexNode::Kind::kNumber &&
                           power.kids[0].text == "1" && in_list(fname, {"sin", "cos", "tan"});
      if (inverse) fname = "arc" + fname;
      std::vector<LatexNode> kids;
      kids.push_back(parse_function_argument());
      if (has_base) kids.push_back(std::move(base));
      LatexNode call = make(LatexNode::Kind::kFunc, std::move(kids), fname);
      if (has_power && !inverse) return make(LatexNode::Kind::kPow, {std::move(call), std::move(power)});
      return call;
    }
    fail("unsupported command \\" + std::string(name), t);
  }

  Lexer lex_;
  int depth_ = 0;
  int abs_depth_ = 0;
};

const char* kind_name(LatexNode::Kind k) {
  switch (k) {
    case LatexNode::Kind::kNumber: return "num";
    case LatexNode::Kind::kSymbol: return "sym";
    case LatexNode::Kind::kAdd: return "add";
    case LatexNode::Kind::kNeg: return "neg";
    case LatexNode::Kind::kPlusMinus: return "pm";
    case LatexNode::Kind::kMul: return "mul";
    case LatexNode::Kind::kDiv: return "div";
    case LatexNode::Kind::kPow: return "pow";
    case LatexNode::Kind::kFunc: return "func";
    case LatexNode::Kind::kRoot: return "root";
    case LatexNode::Kind::kFactorial: return "fact";
    case LatexNode::Kind::kBinom: return "binom";
    case LatexNode::Kind::kAbs: return "abs";
    case LatexNode::Kind::kPercent: return "percent";
    case LatexNode::Kind::kRelation: return "rel";
    case LatexNode::Kind::kGroup: return "group";
    case LatexNode::Kind::kList: return "list";
    case LatexNode::Kind::kUnion: return "union";
  }
  return "?";
}

}  // namespace

LatexNode parse_latex(std::string_view normalized) {
  if (normalized.find_first_not_of(" \t\n\r") == std::string_view::npos) throw LatexParseError("empty answer");
  Parser p(normalized);
  return p.parse_all();
}

std::string to_string(const LatexNode& node) {
  if (node.kind == LatexNode::Kind::kNumber || node.kind == LatexNode::Kind::kSymbol) return node.text;
  std::string s = "(";
  s += kind_name(node.kind);
  if (!node.text.empty()) s += "[" + node.text + "]";
  for (const LatexNode& k : node.kids) s += " " + to_string(k);
  return s + ")";
}

}  // namespace roll::reward
