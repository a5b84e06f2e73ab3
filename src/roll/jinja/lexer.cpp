#include "roll/jinja/lexer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "roll/jinja/error.h"
#include "roll/jinja/python.h"

namespace roll::jinja {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// Jinja matches whitespace with Python's `\s`, which is Unicode-aware.
std::size_t space_at(std::string_view s, std::size_t p) {
  const auto b = static_cast<unsigned char>(s[p]);
  if (b < 0x80) return py::is_space(b) ? 1 : 0;
  const std::size_t n = (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || p + n > s.size()) return 0;
  const std::u32string cp = py::decode(s.substr(p, n));
  return cp.size() == 1 && py::is_space(cp[0]) ? n : 0;
}

std::size_t skip_space(std::string_view s, std::size_t p) {
  while (p < s.size()) {
    const std::size_t k = space_at(s, p);
    if (k == 0) break;
    p += k;
  }
  return p;
}

// Python's str.rstrip().
std::string rstrip_space(std::string_view s) {
  std::size_t p = 0, keep = 0;
  while (p < s.size()) {
    const std::size_t k = space_at(s, p);
    if (k) {
      p += k;
    } else {
      ++p;
      while (p < s.size() && (static_cast<unsigned char>(s[p]) & 0xC0) == 0x80) ++p;
      keep = p;
    }
  }
  return std::string(s.substr(0, keep));
}

bool all_space(std::string_view s) { return !s.empty() && skip_space(s, 0) == s.size(); }

int count_newlines(std::string_view s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

// Jinja's lexer normalises \r\n and \r to \n and drops one trailing newline.
std::string normalize(std::string_view src, bool keep_trailing_newline) {
  std::string out;
  out.reserve(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      out += '\n';
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      out += src[i];
    }
  }
  if (!keep_trailing_newline && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  Lexer(std::string_view source, const std::string& name, const LexerOptions& options)
      : src_(normalize(source, options.keep_trailing_newline)), name_(name), opt_(options) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      const std::size_t idx = find_tag_start(pos_);
      if (idx == std::string::npos) {
        push_data(src_.substr(pos_), line_);
        break;
      }
      const char kind = src_[idx + 1];
      std::size_t after = idx + 2;
      char sign = 0;
      if (after < src_.size() && (src_[after] == '-' || src_[after] == '+')) sign = src_[after++];
      std::size_t raw_end = 0;
      const bool raw = kind == '%' && match_raw_begin(after, raw_end);

      std::string text = src_.substr(pos_, idx - pos_);
      const int text_line = line_;
      line_ += count_newlines(text);
      pos_ = idx;
      push_data(strip_before(std::move(text), sign, kind == '{'), text_line);

      if (kind == '#') {
        lex_comment(after);
      } else if (raw) {
        lex_raw(idx, raw_end);
      } else {
        lex_tag(kind, after);
      }
    }
    out_.push_back(Token{TokenType::End, "", 0, 0, line_});
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { throw TemplateError(name_, line_, message); }

  bool starts(std::size_t p, std::string_view s) const { return src_.compare(p, s.size(), s) == 0; }

  std::size_t find_tag_start(std::size_t from) const {
    for (std::size_t p = src_.find('{', from); p != std::string::npos; p = src_.find('{', p + 1)) {
      if (p + 1 < src_.size() && (src_[p + 1] == '{' || src_[p + 1] == '%' || src_[p + 1] == '#')) return p;
    }
    return std::string::npos;
  }

  void push_data(std::string text, int line) {
    if (!text.empty()) out_.push_back(Token{TokenType::Data, std::move(text), 0, 0, line});
  }

  // Whitespace control of the text before a tag: `-` strips all of it, lstrip_blocks strips the
  // indentation of a block/comment tag that starts its line (never for `{{` or with `+`).
  std::string strip_before(std::string text, char sign, bool variable) const {
    if (sign == '-') return rstrip_space(text);
    if (sign != '+' && opt_.lstrip_blocks && !variable) {
      const std::size_t nl = text.rfind('\n');
      const std::size_t l = nl == std::string::npos ? 0 : nl + 1;
      if ((l > 0 || line_starting_) && all_space(std::string_view(text).substr(l))) text.resize(l);
    }
    return text;
  }

  // Consumes the text [pos_, p) of a tag's end, updating the line and line-start state.
  void finish(std::size_t p) {
    line_ += count_newlines(std::string_view(src_).substr(pos_, p - pos_));
    line_starting_ = p > 0 && src_[p - 1] == '\n';
    pos_ = p;
  }

  // `-%}` eats following whitespace; `%}` eats one newline under trim_blocks; `+%}` nothing.
  std::size_t after_block_end(std::size_t p, char sign) const {
    if (sign == '-') return skip_space(src_, p);
    if (sign != '+' && opt_.trim_blocks && p < src_.size() && src_[p] == '\n') return p + 1;
    return p;
  }

  void lex_comment(std::size_t content) {
    const std::size_t q = src_.find("#}", content);
    if (q == std::string::npos) fail("Missing end of comment tag");
    const char sign = q > content && (src_[q - 1] == '-' || src_[q - 1] == '+') ? src_[q - 1] : 0;
    finish(after_block_end(q + 2, sign));
  }

  // `{%[-+] raw [-]%}` at the tag that starts before `p`; `end` receives the first byte after it.
  bool match_raw_begin(std::size_t p, std::size_t& end) const {
    p = skip_space(src_, p);
    if (!starts(p, "raw")) return false;
    p = skip_space(src_, p + 3);
    if (starts(p, "-%}")) {
      end = skip_space(src_, p + 3);
      return true;
    }
    if (starts(p, "%}")) {
      end = p + 2;  // no trim_blocks here: Jinja's raw-begin rule has none
      return true;
    }
    return false;
  }

  void lex_raw(std::size_t tag_start, std::size_t content) {
    pos_ = tag_start;
    finish(content);
    for (std::size_t q = src_.find("{%", content); q != std::string::npos; q = src_.find("{%", q + 1)) {
      std::size_t p = q + 2;
      char sign = 0;
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) sign = src_[p++];
      p = skip_space(src_, p);
      if (!starts(p, "endraw")) continue;
      p = skip_space(src_, p + 6);
      char end_sign = 0;
      if (starts(p, "+%}") || starts(p, "-%}")) end_sign = src_[p++];
      if (!starts(p, "%}")) continue;
      std::string text = src_.substr(content, q - content);
      const int text_line = line_;
      push_data(strip_before(std::move(text), sign, false), text_line);
      finish(after_block_end(p + 2, end_sign));
      return;
    }
    fail("Missing end of raw directive");
  }

  void lex_tag(char kind, std::size_t p) {
    const bool block = kind == '%';
    out_.push_back(Token{block ? TokenType::BlockBegin : TokenType::VariableBegin, "", 0, 0, line_});
    std::vector<char> balance;
    int tok_line = line_;
    std::size_t counted = pos_;
    while (true) {
      tok_line += count_newlines(std::string_view(src_).substr(counted, p - counted));
      counted = p;
      if (p >= src_.size()) {
        line_ = tok_line;
        fail(block ? "unexpected end of template, expected end of block ('%}')"
                   : "unexpected end of template, expected end of print statement ('}}')");
      }
      if (balance.empty()) {
        std::size_t end = 0;
        if (block && (starts(p, "+%}") || starts(p, "-%}")))
          end = after_block_end(p + 3, src_[p]);
        else if (block && starts(p, "%}"))
          end = after_block_end(p + 2, 0);
        else if (!block && starts(p, "-}}"))
          end = skip_space(src_, p + 3);
        else if (!block && starts(p, "}}"))
          end = p + 2;
        if (end) {
          out_.push_back(Token{block ? TokenType::BlockEnd : TokenType::VariableEnd, "", 0, 0, tok_line});
          finish(end);
          return;
        }
      }
      if (const std::size_t k = space_at(src_, p)) {
        p += k;
        continue;
      }
      const char c = src_[p];
      if (is_digit(c)) {
        p = lex_number(p, tok_line, p > 0 && src_[p - 1] == '.');
      } else if (is_name_start(c)) {
        std::size_t e = p;
        while (e < src_.size() && is_name_char(src_[e])) ++e;
        out_.push_back(Token{TokenType::Name, src_.substr(p, e - p), 0, 0, tok_line});
        p = e;
      } else if (c == '\'' || c == '"') {
        p = lex_string(p, tok_line);
      } else {
        p = lex_operator(p, tok_line, balance);
      }
    }
  }

  // (\d+_)*\d+ : digits with single underscores between them.
  std::size_t scan_digits(std::size_t p) const {
    std::size_t e = p;
    while (e < src_.size() && is_digit(src_[e])) {
      ++e;
      if (e + 1 < src_.size() && src_[e] == '_' && is_digit(src_[e + 1])) ++e;
    }
    return e;
  }

  // After a '.', only an integer (Jinja's float rule has a (?<!\.) lookbehind): x.0.1 is x[0][1].
  std::size_t lex_number(std::size_t p, int tok_line, bool after_dot) {
    auto clean = [&](std::size_t b, std::size_t e) {
      std::string s = src_.substr(b, e - b);
      s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
      return s;
    };
    const std::size_t int_end = scan_digits(p);
    std::size_t r = int_end;
    bool is_float = false;
    if (after_dot) {
      // fall through to the integer rules
    } else if (r + 1 < src_.size() && src_[r] == '.' && is_digit(src_[r + 1])) {
      r = scan_digits(r + 1);
      is_float = true;
    }
    if (!after_dot && r < src_.size() && (src_[r] == 'e' || src_[r] == 'E')) {
      std::size_t s = r + 1;
      if (s < src_.size() && (src_[s] == '+' || src_[s] == '-')) ++s;
      const std::size_t t = scan_digits(s);
      if (t > s) {
        r = t;
        is_float = true;
      }
    }
    if (is_float) {
      const std::string text = clean(p, r);
      out_.push_back(Token{TokenType::Float, text, 0, std::strtod(text.c_str(), nullptr), tok_line});
      return r;
    }
    // Integers: 0b/0o/0x prefixes, a decimal without leading zeros, or zeros.
    int base = 10;
    std::size_t b = p, e = p;
    if (src_[p] == '0' && p + 1 < src_.size()) {
      const char x = static_cast<char>(src_[p + 1] | 0x20);
      base = x == 'b' ? 2 : x == 'o' ? 8 : x == 'x' ? 16 : 10;
    }
    auto in_base = [&](char ch) {
      if (base == 16) return is_digit(ch) || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f');
      return ch >= '0' && ch < static_cast<char>('0' + base);
    };
    if (base != 10) {
      b = e = p + 2;
      while (e < src_.size() && (in_base(src_[e]) || (src_[e] == '_' && e + 1 < src_.size() && in_base(src_[e + 1]))))
        ++e;
      if (e == b) {  // "0x" with no digits: just the zero
        base = 10;
        b = p;
        e = p + 1;
      }
    } else if (src_[p] == '0') {
      while (e < src_.size() && (src_[e] == '0' || (src_[e] == '_' && e + 1 < src_.size() && src_[e + 1] == '0'))) ++e;
    } else {
      e = int_end;
    }
    const std::string text = clean(b, e);
    errno = 0;
    const long long v = std::strtoll(text.c_str(), nullptr, base);
    if (errno == ERANGE) fail("integer literal out of range: " + text);
    out_.push_back(Token{TokenType::Integer, src_.substr(p, e - p), v, 0, tok_line});
    return e;
  }

  std::size_t lex_string(std::size_t p, int tok_line) {
    const char quote = src_[p];
    std::size_t e = p + 1;
    while (e < src_.size() && src_[e] != quote) e += src_[e] == '\\' ? 2 : 1;
    if (e >= src_.size()) fail(std::string("unexpected char ") + quote + " (unterminated string)");
    out_.push_back(Token{TokenType::String, unescape(std::string_view(src_).substr(p + 1, e - p - 1)), 0, 0, tok_line});
    return e + 1;
  }

  // Python's "unicode-escape" decoding, which Jinja applies to string literals.
  std::string unescape(std::string_view s) const {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\\' || i + 1 >= s.size()) {
        out += s[i];
        continue;
      }
      const char c = s[++i];
      auto hex = [&](std::size_t n) {
        char32_t v = 0;
        for (std::size_t k = 1; k <= n; ++k) {
          if (i + k >= s.size()) fail("truncated escape in string literal");
          const char h = static_cast<char>(s[i + k] | 0x20);
          if (!is_digit(s[i + k]) && !(h >= 'a' && h <= 'f')) fail("truncated escape in string literal");
          v = v * 16 + static_cast<char32_t>(is_digit(s[i + k]) ? s[i + k] - '0' : h - 'a' + 10);
        }
        i += n;
        py::append_utf8(out, v);
      };
      switch (c) {
        case '\n': break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case 'x': hex(2); break;
        case 'u': hex(4); break;
        case 'U': hex(8); break;
        default:
          if (c >= '0' && c <= '7') {
            char32_t v = static_cast<char32_t>(c - '0');
            for (int k = 0; k < 2 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7'; ++k)
              v = v * 8 + static_cast<char32_t>(s[++i] - '0');
            py::append_utf8(out, v);
          } else {
            out += '\\';
            out += c;
          }
      }
    }
    return out;
  }

  std::size_t lex_operator(std::size_t p, int tok_line, std::vector<char>& balance) {
    static const char* const two[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : two) {
      if (starts(p, op)) {
        out_.push_back(Token{TokenType::Operator, op, 0, 0, tok_line});
        return p + 2;
      }
    }
    const char c = src_[p];
    static const std::string_view singles = "+-/*%~[](){}><=.:|,;";
    if (singles.find(c) == std::string_view::npos) {
      line_ = tok_line;
      fail(std::string("unexpected char '") + c + "'");
    }
    if (c == '(' || c == '[' || c == '{') {
      balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      line_ = tok_line;
      if (balance.empty()) fail(std::string("unexpected '") + c + "'");
      if (balance.back() != c) fail(std::string("unexpected '") + c + "', expected '" + balance.back() + "'");
      balance.pop_back();
    }
    out_.push_back(Token{TokenType::Operator, std::string(1, c), 0, 0, tok_line});
    return p + 1;
  }

  std::string src_;
  std::string name_;
  LexerOptions opt_;
  std::size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const std::string& template_name, const LexerOptions& options) {
  return Lexer(source, template_name, options).run();
}

}  // namespace roll::jinja
