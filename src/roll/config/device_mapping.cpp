#include "roll/config/device_mapping.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>

#include "roll/core/error.h"

namespace roll::config {
namespace {

class Parser {
 public:
  Parser(const std::string& text, const std::string& key) : s_(text), key_(key) {}

  std::vector<int> parse() {
    std::vector<int> out;
    skip_ws();
    if (pos_ == s_.size()) fail("empty expression");
    for (;;) {
      auto part = term();
      out.insert(out.end(), part.begin(), part.end());
      skip_ws();
      if (pos_ == s_.size()) break;
      expect('+');
    }
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw ConfigError(key_, fmt::format("{}: cannot parse device_mapping '{}' at position {}: {} (expected forms: "
                                        "list(range(a,b[,s])), [0,1,2], joined by +)",
                                        key_, s_, pos_, what));
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool accept_word(const char* w) {
    skip_ws();
    size_t n = std::char_traits<char>::length(w);
    if (s_.compare(pos_, n, w) == 0) {
      pos_ += n;
      return true;
    }
    return false;
  }
  void expect(char c) {
    skip_ws();
    if (pos_ >= s_.size() || s_[pos_] != c) fail(fmt::format("expected '{}'", c));
    ++pos_;
  }
  bool peek(char c) {
    skip_ws();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  long integer() {
    skip_ws();
    size_t start = pos_;
    if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) ++pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (start == pos_ || (pos_ == start + 1 && !std::isdigit(static_cast<unsigned char>(s_[start])))) {
      pos_ = start;
      fail("expected an integer");
    }
    // Device indices are small: a larger number is a typo (and range() over it would not end).
    constexpr long kLimit = 1 << 16;
    long v = 0;
    const char* first = s_.data() + start + (s_[start] == '+' ? 1 : 0);
    const auto [end, ec] = std::from_chars(first, s_.data() + pos_, v);
    if (ec != std::errc() || end != s_.data() + pos_ || v > kLimit || v < -kLimit) {
      pos_ = start;
      fail(fmt::format("integer out of range (device indices are at most {})", kLimit));
    }
    return v;
  }
  std::vector<int> range_call() {
    expect('(');
    std::vector<long> args{integer()};
    while (peek(',')) {
      expect(',');
      args.push_back(integer());
    }
    expect(')');
    if (args.size() > 3) fail("range() takes at most 3 arguments");
    long a = 0, b = 0, step = 1;
    if (args.size() == 1) {
      b = args[0];
    } else {
      a = args[0];
      b = args[1];
      if (args.size() == 3) step = args[2];
    }
    if (step == 0) fail("range() step must not be zero");
    std::vector<int> out;
    for (long i = a; step > 0 ? i < b : i > b; i += step) out.push_back(static_cast<int>(i));
    return out;
  }
  std::vector<int> list_literal() {
    expect('[');
    std::vector<int> out;
    if (peek(']')) {
      expect(']');
      return out;
    }
    out.push_back(static_cast<int>(integer()));
    while (peek(',')) {
      expect(',');
      if (peek(']')) break;  // trailing comma
      out.push_back(static_cast<int>(integer()));
    }
    expect(']');
    return out;
  }
  std::vector<int> term() {
    if (accept_word("list")) {
      expect('(');
      std::vector<int> inner;
      if (accept_word("range")) {
        inner = range_call();
      } else if (peek('[')) {
        inner = list_literal();
      } else {
        fail("expected range(...) or [...] inside list(...)");
      }
      expect(')');
      return inner;
    }
    if (accept_word("range")) return range_call();
    if (peek('[')) return list_literal();
    fail("expected list(...) or [...]");
  }

  const std::string& s_;
  const std::string& key_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<int> parse_device_mapping(const std::string& text, const std::string& key) {
  std::string t = text;
  // A quoted '[..]' arrives with its quotes when it was double-quoted inside a string.
  if (t.size() >= 2 && (t.front() == '\'' || t.front() == '"') && t.back() == t.front()) t = t.substr(1, t.size() - 2);
  auto ids = Parser(t, key).parse();
  for (int id : ids)
    if (id < 0) throw ConfigError(key, fmt::format("{}: device id {} in '{}' is negative", key, id, text));
  for (size_t i = 0; i < ids.size(); ++i)
    for (size_t j = i + 1; j < ids.size(); ++j)
      if (ids[i] == ids[j])
        throw ConfigError(key, fmt::format("{}: device id {} appears twice in '{}'", key, ids[i], text));
  return ids;
}

std::string format_device_ids(const std::vector<int>& ids) {
  std::string out;
  size_t i = 0;
  while (i < ids.size()) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += j > i ? fmt::format("{}-{}", ids[i], ids[j]) : std::to_string(ids[i]);
    i = j + 1;
  }
  return out.empty() ? "-" : out;
}

}  // namespace roll::config
