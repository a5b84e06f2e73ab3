#pragma once
// Python `str` semantics the rule rewards depend on (docs/rewards.md, "Rule rewards"): ROLL's checks
// are Python one-liners (`text.split()`, `strip()`, `lower()`, `splitlines()`, regex `\w`), and a
// reward that disagrees with them on whitespace or case disagrees on the score. Text is handled as
// code points (std::u32string) so lengths and indices are Python's.
//
// Character classes: whitespace, line breaks and the special-cased uppercase letters are Python's
// own tables written out; letters, digits and simple case mappings come from glibc's C.UTF-8
// locale, which follows a Unicode version close to CPython's (an ASCII fallback when the locale is
// missing). Contextual casing (final sigma) is not reproduced.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace roll::reward::rule {

// UTF-8 -> code points; a byte that does not start a valid sequence becomes U+FFFD.
std::u32string from_utf8(std::string_view text);
std::string to_utf8(std::u32string_view text);

bool py_isspace(char32_t c);   // str.isspace()
bool py_isword(char32_t c);    // regex \w on str: isalnum() or '_'
bool py_isupper(char32_t c);   // a cased uppercase letter (str.isupper() of one character)

std::u32string py_lower(std::u32string_view text);        // str.lower() (İ -> i + U+0307)
bool py_equals_upper(std::u32string_view text);           // text == text.upper()
bool py_equals_lower(std::u32string_view text);           // text == text.lower()

std::u32string py_strip(std::u32string_view text);                          // str.strip()
std::vector<std::u32string> py_split(std::u32string_view text);             // str.split()
// str.split(sep) for a non-empty sep.
std::vector<std::u32string> py_split(std::u32string_view text, std::u32string_view sep);
std::vector<std::u32string> py_splitlines(std::u32string_view text);        // str.splitlines()
// str.count(sub): non-overlapping occurrences; an empty sub counts len + 1.
size_t py_count(std::u32string_view text, std::u32string_view sub);

// Maximal runs of \w characters: what `re.findall(r"\b\w+\b", text)` returns.
std::vector<std::u32string> word_runs(std::u32string_view text);

}  // namespace roll::reward::rule
