#include "roll/jinja/python.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <utf8proc.h>

#include "roll/core/error.h"

namespace roll::jinja::py {

std::u32string decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    int extra = b < 0x80 ? 0 : (b >> 5) == 0x6 ? 1 : (b >> 4) == 0xE ? 2 : (b >> 3) == 0x1E ? 3 : -1;
    char32_t c = extra == 0 ? b : extra == 1 ? (b & 0x1F) : extra == 2 ? (b & 0x0F) : (b & 0x07);
    bool ok = extra >= 0;
    for (int k = 1; ok && k <= extra; ++k) {
      if (i + k >= s.size()) {
        ok = false;
        break;
      }
      const auto cb = static_cast<unsigned char>(s[i + k]);
      if ((cb & 0xC0) != 0x80) ok = false;
      c = (c << 6) | (cb & 0x3F);
    }
    if (!ok) {
      out.push_back(b);  // not UTF-8: the byte stands for itself
      ++i;
      continue;
    }
    out.push_back(c);
    i += extra + 1;
  }
  return out;
}

std::string encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

std::size_t length(std::string_view s) {
  bool ascii = true;
  for (char ch : s) ascii = ascii && static_cast<unsigned char>(ch) < 0x80;
  return ascii ? s.size() : decode(s).size();
}

bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

std::string strip(std::string_view s, const std::string* chars, bool left, bool right) {
  const std::u32string cps = decode(s);
  const std::u32string set = chars ? decode(*chars) : std::u32string();
  auto stripped = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_space(c); };
  std::size_t b = 0, e = cps.size();
  if (left)
    while (b < e && stripped(cps[b])) ++b;
  if (right)
    while (e > b && stripped(cps[e - 1])) --e;
  return encode(std::u32string_view(cps).substr(b, e - b));
}

namespace {

void check_sep(const std::string* sep) {
  if (sep && sep->empty()) throw roll::Error("empty separator");
}

// Whitespace split, from the left; the rest after `maxsplit` pieces keeps its trailing space.
std::vector<std::string> split_ws(const std::u32string& cps, std::int64_t maxsplit) {
  std::vector<std::string> out;
  std::size_t i = 0, n = cps.size();
  while (true) {
    while (i < n && is_space(cps[i])) ++i;
    if (i == n) break;
    if (maxsplit >= 0 && static_cast<std::int64_t>(out.size()) == maxsplit) {
      out.push_back(encode(std::u32string_view(cps).substr(i)));
      break;
    }
    std::size_t j = i;
    while (j < n && !is_space(cps[j])) ++j;
    out.push_back(encode(std::u32string_view(cps).substr(i, j - i)));
    i = j;
  }
  return out;
}

}  // namespace

std::vector<std::string> split(std::string_view s, const std::string* sep, std::int64_t maxsplit) {
  check_sep(sep);
  if (!sep) return split_ws(decode(s), maxsplit);
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (maxsplit < 0 || static_cast<std::int64_t>(out.size()) < maxsplit) {
    const std::size_t hit = s.find(*sep, pos);
    if (hit == std::string_view::npos) break;
    out.emplace_back(s.substr(pos, hit - pos));
    pos = hit + sep->size();
  }
  out.emplace_back(s.substr(pos));
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::string* sep, std::int64_t maxsplit) {
  check_sep(sep);
  std::vector<std::string> out;
  if (!sep) {
    std::u32string cps = decode(s);
    std::size_t e = cps.size();
    while (true) {
      while (e > 0 && is_space(cps[e - 1])) --e;
      if (e == 0) break;
      if (maxsplit >= 0 && static_cast<std::int64_t>(out.size()) == maxsplit) {
        out.push_back(encode(std::u32string_view(cps).substr(0, e)));
        break;
      }
      std::size_t b = e;
      while (b > 0 && !is_space(cps[b - 1])) --b;
      out.push_back(encode(std::u32string_view(cps).substr(b, e - b)));
      e = b;
    }
  } else {
    std::size_t end = s.size();
    while (maxsplit < 0 || static_cast<std::int64_t>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      const std::size_t hit = s.rfind(*sep, end - sep->size());
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
      end = hit;
    }
    out.emplace_back(s.substr(0, end));
  }
  return {out.rbegin(), out.rend()};
}

std::string replace(std::string_view s, std::string_view old, std::string_view with, std::int64_t count) {
  std::string out;
  if (old.empty()) {  // Python inserts `with` before every code point and at the end
    const std::u32string cps = decode(s);
    std::int64_t done = 0;
    for (char32_t c : cps) {
      if (count < 0 || done < count) {
        out += with;
        ++done;
      }
      append_utf8(out, c);
    }
    if (count < 0 || done < count) out += with;
    return out;
  }
  std::size_t pos = 0;
  std::int64_t done = 0;
  while (count < 0 || done < count) {
    const std::size_t hit = s.find(old, pos);
    if (hit == std::string_view::npos) break;
    out += s.substr(pos, hit - pos);
    out += with;
    pos = hit + old.size();
    ++done;
  }
  out += s.substr(pos);
  return out;
}

std::int64_t find(std::string_view s, std::string_view sub) {
  const std::size_t hit = s.find(sub);
  if (hit == std::string_view::npos) return -1;
  return static_cast<std::int64_t>(length(s.substr(0, hit)));
}

std::int64_t count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<std::int64_t>(length(s)) + 1;
  std::int64_t n = 0;
  for (std::size_t pos = s.find(sub); pos != std::string_view::npos; pos = s.find(sub, pos + sub.size())) ++n;
  return n;
}

namespace {
// Python's "cased" characters: upper, lower and titlecase letters.
bool is_cased(char32_t c) {
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
}
char32_t to_upper(char32_t c) { return static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c))); }
char32_t to_lower(char32_t c) { return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))); }
char32_t to_title(char32_t c) { return static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c))); }

template <class F>
std::string map_chars(std::string_view s, F f) {
  std::u32string cps = decode(s);
  for (char32_t& c : cps) c = f(c);
  return encode(cps);
}
}  // namespace

std::string upper(std::string_view s) { return map_chars(s, to_upper); }
std::string lower(std::string_view s) { return map_chars(s, to_lower); }

std::string capitalize(std::string_view s) {
  std::u32string cps = decode(s);
  for (std::size_t i = 0; i < cps.size(); ++i) cps[i] = i == 0 ? to_title(cps[i]) : to_lower(cps[i]);
  return encode(cps);
}

std::string title(std::string_view s) {
  std::u32string cps = decode(s);
  bool prev_cased = false;
  for (char32_t& c : cps) {
    const bool cased = is_cased(c);
    c = prev_cased ? to_lower(c) : to_title(c);
    prev_cased = cased;
  }
  return encode(cps);
}

bool all_cased_are(std::string_view s, bool lower_case) {
  bool any = false;
  for (char32_t c : decode(s)) {
    if (!is_cased(c)) continue;
    any = true;
    const bool is_lower = utf8proc_category(static_cast<utf8proc_int32_t>(c)) == UTF8PROC_CATEGORY_LL;
    if (is_lower != lower_case) return false;
  }
  return any;
}

std::vector<std::int64_t> slice_indices(std::int64_t len, std::optional<std::int64_t> start,
                                        std::optional<std::int64_t> stop, std::optional<std::int64_t> step) {
  const std::int64_t st = step.value_or(1);
  if (st == 0) throw roll::Error("slice step cannot be zero");
  auto adjust = [&](std::optional<std::int64_t> v, std::int64_t dflt, std::int64_t lo, std::int64_t hi) {
    if (!v) return dflt;
    std::int64_t x = *v < 0 ? *v + len : *v;
    return x < lo ? lo : x > hi ? hi : x;
  };
  std::vector<std::int64_t> out;
  if (st > 0) {
    const std::int64_t b = adjust(start, 0, 0, len), e = adjust(stop, len, 0, len);
    for (std::int64_t i = b; i < e; i += st) out.push_back(i);
  } else {
    const std::int64_t b = adjust(start, len - 1, -1, len - 1), e = adjust(stop, -1, -1, len - 1);
    for (std::int64_t i = b; i > e; i += st) out.push_back(i);
  }
  return out;
}

namespace {
// str.isprintable() is false for control, format, separator (but ' ') and private-use code points.
bool printable(char32_t c) {
  if (c < 0x20 || (c >= 0x7F && c < 0xA0)) return false;
  if (c == 0x20) return true;
  if (c == 0xA0 || c == 0xAD || c == 0x1680 || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) ||
      (c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFB) ||
      (c >= 0xE000 && c <= 0xF8FF) || (c >= 0xD800 && c <= 0xDFFF) || (c >= 0x600 && c <= 0x605) ||
      c == 0x61C || c == 0x6DD || c == 0x70F || c == 0x180E)
    return false;
  return true;
}
}  // namespace

std::string repr_str(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : decode(s)) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == static_cast<char32_t>(quote)) {
      out += '\\';
      out += quote;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (!printable(c)) {
      char buf[16];
      if (c < 0x100)
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      else if (c < 0x10000)
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      else
        std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
      out += buf;
    } else {
      append_utf8(out, c);
    }
  }
  out += quote;
  return out;
}

std::string repr_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  // Shortest round-trip digits, then Python's layout: exponent form when the decimal exponent is
  // below -4 or at least 16, otherwise positional with at least one fractional digit.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const std::size_t e_pos = sci.find('e');
  const int exp = std::atoi(sci.c_str() + e_pos + 1);
  std::string digits;
  for (std::size_t i = 0; i < e_pos; ++i)
    if (sci[i] != '.') digits += sci[i];
  if (exp < -4 || exp >= 16) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return out + eb;
  }
  if (exp < 0) return sign + "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
  const auto int_len = static_cast<std::size_t>(exp) + 1;
  if (digits.size() <= int_len) return sign + digits + std::string(int_len - digits.size(), '0') + ".0";
  return sign + digits.substr(0, int_len) + "." + digits.substr(int_len);
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  if (b == 0) throw roll::Error("integer division or modulo by zero");
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

std::int64_t floor_mod(std::int64_t a, std::int64_t b) {
  if (b == 0) throw roll::Error("integer division or modulo by zero");
  std::int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

double floor_mod(double a, double b) {
  if (b == 0) throw roll::Error("float modulo");
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

}  // namespace roll::jinja::py
