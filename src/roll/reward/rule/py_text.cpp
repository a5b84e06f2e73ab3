#include "roll/reward/rule/py_text.h"

#include <locale.h>
#include <wctype.h>

#include "roll/core/utf8.h"

namespace roll::reward::rule {
namespace {

// One C.UTF-8 locale for the classification calls; nullptr when the system has none (then only
// ASCII letters are letters).
locale_t utf8_locale() {
  static const locale_t loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  return loc;
}

bool ascii_alpha(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

char32_t simple_lower(char32_t c) {
  if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c;
  const locale_t loc = utf8_locale();
  return loc ? static_cast<char32_t>(towlower_l(static_cast<wint_t>(c), loc)) : c;
}

char32_t simple_upper(char32_t c) {
  if (c < 0x80) return c >= 'a' && c <= 'z' ? c - 32 : c;
  const locale_t loc = utf8_locale();
  return loc ? static_cast<char32_t>(towupper_l(static_cast<wint_t>(c), loc)) : c;
}

// Characters whose str.upper() is more than one character (Unicode SpecialCasing.txt,
// unconditional mappings): never equal to their uppercase.
bool upper_expands(char32_t c) {
  switch (c) {
    case 0x00DF: case 0x0149: case 0x01F0: case 0x0390: case 0x03B0: case 0x0587:
    case 0x1F50: case 0x1F52: case 0x1F54: case 0x1F56:
    case 0x1FB2: case 0x1FB3: case 0x1FB4: case 0x1FB6: case 0x1FB7: case 0x1FBC:
    case 0x1FC2: case 0x1FC3: case 0x1FC4: case 0x1FC6: case 0x1FC7: case 0x1FCC:
    case 0x1FD2: case 0x1FD3: case 0x1FD6: case 0x1FD7:
    case 0x1FE2: case 0x1FE3: case 0x1FE4: case 0x1FE6: case 0x1FE7:
    case 0x1FF2: case 0x1FF3: case 0x1FF4: case 0x1FF6: case 0x1FF7: case 0x1FFC:
      return true;
    default:
      return (c >= 0x1E96 && c <= 0x1E9A) || (c >= 0x1F80 && c <= 0x1FAF) || (c >= 0xFB00 && c <= 0xFB06) ||
             (c >= 0xFB13 && c <= 0xFB17);
  }
}

bool is_line_break(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E || c == 0x85 ||
         c == 0x2028 || c == 0x2029;
}

}  // namespace

std::u32string from_utf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    int len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    char32_t cp = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    bool ok = len > 0 && i + static_cast<size_t>(len) <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      const auto cb = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      ok = (cb & 0xC0) == 0x80;
      cp = (cp << 6) | (cb & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    if (ok && ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
               (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF))
      ok = false;
    if (!ok) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += static_cast<size_t>(len);
  }
  return out;
}

std::string to_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

bool py_isspace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool py_isword(char32_t c) {
  if (c < 0x80) return ascii_alpha(c) || (c >= '0' && c <= '9') || c == '_';
  const locale_t loc = utf8_locale();
  return loc && iswalnum_l(static_cast<wint_t>(c), loc);
}

bool py_isupper(char32_t c) {
  if (c < 0x80) return c >= 'A' && c <= 'Z';
  const locale_t loc = utf8_locale();
  return loc && iswupper_l(static_cast<wint_t>(c), loc);
}

std::u32string py_lower(std::u32string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (char32_t c : text) {
    if (c == 0x0130) {  // İ: the only unconditional one-to-two lowercase mapping
      out.push_back('i');
      out.push_back(0x0307);
    } else {
      out.push_back(simple_lower(c));
    }
  }
  return out;
}

bool py_equals_upper(std::u32string_view text) {
  for (char32_t c : text)
    if (upper_expands(c) || simple_upper(c) != c) return false;
  return true;
}

bool py_equals_lower(std::u32string_view text) {
  for (char32_t c : text)
    if (c == 0x0130 || simple_lower(c) != c) return false;
  return true;
}

std::u32string py_strip(std::u32string_view text) {
  size_t b = 0, e = text.size();
  while (b < e && py_isspace(text[b])) ++b;
  while (e > b && py_isspace(text[e - 1])) --e;
  return std::u32string(text.substr(b, e - b));
}

std::vector<std::u32string> py_split(std::u32string_view text) {
  std::vector<std::u32string> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && py_isspace(text[i])) ++i;
    const size_t b = i;
    while (i < text.size() && !py_isspace(text[i])) ++i;
    if (i > b) out.emplace_back(text.substr(b, i - b));
  }
  return out;
}

std::vector<std::u32string> py_split(std::u32string_view text, std::u32string_view sep) {
  std::vector<std::u32string> out;
  size_t from = 0;
  for (size_t at = text.find(sep); at != std::u32string_view::npos; at = text.find(sep, from)) {
    out.emplace_back(text.substr(from, at - from));
    from = at + sep.size();
  }
  out.emplace_back(text.substr(from));
  return out;
}

std::vector<std::u32string> py_splitlines(std::u32string_view text) {
  std::vector<std::u32string> out;
  size_t i = 0;
  while (i < text.size()) {
    const size_t b = i;
    while (i < text.size() && !is_line_break(text[i])) ++i;
    out.emplace_back(text.substr(b, i - b));
    if (i < text.size()) i += (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ? 2 : 1;
  }
  return out;
}

size_t py_count(std::u32string_view text, std::u32string_view sub) {
  if (sub.empty()) return text.size() + 1;
  size_t n = 0;
  for (size_t at = text.find(sub); at != std::u32string_view::npos; at = text.find(sub, at + sub.size())) ++n;
  return n;
}

std::vector<std::u32string> word_runs(std::u32string_view text) {
  std::vector<std::u32string> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && !py_isword(text[i])) ++i;
    const size_t b = i;
    while (i < text.size() && py_isword(text[i])) ++i;
    if (i > b) out.emplace_back(text.substr(b, i - b));
  }
  return out;
}

}  // namespace roll::reward::rule
