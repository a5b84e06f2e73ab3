// LaTeX clean-up (see latex_normalize.h). Each step is one pass over the string.
#include "roll/reward/math/latex_normalize.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <vector>

namespace roll::reward {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  if (from.empty() || s.find(from) == std::string::npos) return s;
  std::string out;
  out.reserve(s.size());
  std::size_t pos = 0;
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, pos)) {
    out.append(s, pos, p - pos);
    out.append(to);
    pos = p + from.size();
  }
  out.append(s, pos, std::string::npos);
  return out;
}

std::string_view trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// Unicode symbols models print instead of LaTeX.
std::string replace_unicode(std::string s) {
  static const std::array<std::pair<std::string_view, std::string_view>, 16> kMap{{
      {"\u00d7", "\\times "}, {"\u00f7", "\\div "},   {"\u2212", "-"},      {"\u2013", "-"},
      {"\u2264", "\\le "},    {"\u2265", "\\ge "},    {"\u2260", "\\ne "},  {"\u03c0", "\\pi "},
      {"\u221e", "\\infty "}, {"\u221a", "\\sqrt "},  {"\u00b0", ""},       {"\u00b7", "\\cdot "},
      {"\u222a", "\\cup "},   {"\u2208", "\\in "},    {"\u00a0", " "},      {"\u22c5", "\\cdot "},
  }};
  for (const auto& [from, to] : kMap) s = replace_all(std::move(s), from, to);
  return s;
}

// Index of the '}' matching the '{' at `open`, or npos.
std::size_t match_brace(std::string_view s, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '{' || s[i + 1] == '}')) {
      ++i;
      continue;
    }
    if (s[i] == '{') ++depth;
    if (s[i] == '}' && --depth == 0) return i;
  }
  return std::string_view::npos;
}

bool in_list(std::string_view name, std::initializer_list<std::string_view> list) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

bool is_unit_word(std::string_view w);

// \boxed{X} -> X, \text{X} -> " X " (and the other wrappers). Recursive descent over braces, so
// nested wrappers unwrap in one pass; unbalanced wrappers are left for the parser to reject.
std::string unwrap_commands(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '\\' && i + 1 < s.size() && is_alpha(s[i + 1])) {
      std::size_t j = i + 1;
      while (j < s.size() && is_alpha(s[j])) ++j;
      std::string_view name = s.substr(i + 1, j - i - 1);
      const bool boxed = in_list(name, {"boxed", "fbox", "framebox"});
      const bool textual = in_list(name, {"text", "textbf", "textit", "textrm", "textnormal", "textsf", "texttt",
                                          "mathrm", "mathbf", "mathit", "mathsf", "mathtt", "mathnormal",
                                          "boldsymbol", "bm", "mbox", "hbox", "operatorname", "emph", "textup"});
      if (boxed || textual) {
        std::size_t k = j;
        while (k < s.size() && s[k] == ' ') ++k;
        if (k < s.size() && s[k] == '{') {
          std::size_t close = match_brace(s, k);
          if (close != std::string_view::npos) {
            std::string inner = unwrap_commands(s.substr(k + 1, close - k - 1));
            std::string_view word = trim(inner);
            const bool is_word = textual && word.size() >= 2 &&
                                 std::all_of(word.begin(), word.end(), [](char ch) { return is_alpha(ch); }) &&
                                 !is_unit_word(word) && word != "and" && word != "or" && word != "percent";
            if (is_word) {
              // A word answer ("\text{Monday}") is one symbol, not a product of letters.
              out += " \\word{";
              out += word;
              out += "} ";
            } else {
              if (textual) out += ' ';
              out += inner;
              if (textual) out += ' ';
            }
            i = close + 1;
            continue;
          }
        }
      }
      out.append(s.substr(i, j - i));
      i = j;
      continue;
    }
    out += s[i++];
  }
  return out;
}

// Command-level rewrites: spacing and sizing commands dropped, synonyms mapped to one spelling.
std::string rewrite_commands(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '~') {
      out += ' ';
      ++i;
      continue;
    }
    if (c != '\\' || i + 1 >= s.size()) {
      out += c;
      ++i;
      continue;
    }
    const char n = s[i + 1];
    if (!is_alpha(n)) {
      // \, \; \: \! \  and \\ are spacing; \% and \$ are percent and currency.
      if (n == ',' || n == ';' || n == ':' || n == '!' || n == ' ' || n == '\\' || n == '\n') {
        out += ' ';
      } else if (n == '%') {
        out += '%';
      } else if (n == '$') {
        // currency sign: dropped
      } else {
        out += c;
        out += n;
      }
      i += 2;
      continue;
    }
    std::size_t j = i + 1;
    while (j < s.size() && is_alpha(s[j])) ++j;
    std::string_view name = s.substr(i + 1, j - i - 1);
    std::size_t next = j;
    if (in_list(name, {"left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr", "biggl",
                       "biggr", "Biggl", "Biggr", "middle"})) {
      if (next < s.size() && s[next] == '.') ++next;  // \left. and \right. are invisible
      out += ' ';
    } else if (in_list(name, {"quad", "qquad", "displaystyle", "textstyle", "scriptstyle", "limits", "nolimits",
                              "thinspace", "medspace", "thickspace", "enspace", "space", "nonumber", "notag"})) {
      out += ' ';
    } else if (in_list(name, {"circ", "degree", "degrees"})) {
      out += ' ';
    } else if (in_list(name, {"lvert", "rvert", "vert", "mid", "lVert", "rVert", "Vert"})) {
      out += '|';
    } else if (name == "lbrace") {
      out += "\\{";
    } else if (name == "rbrace") {
      out += "\\}";
    } else if (name == "lbrack") {
      out += '[';
    } else if (name == "rbrack") {
      out += ']';
    } else if (in_list(name, {"dfrac", "tfrac", "cfrac"})) {
      out += "\\frac";
    } else if (in_list(name, {"dbinom", "tbinom"})) {
      out += "\\binom";
    } else {
      out.append(s.substr(i, j - i));
    }
    i = next;
  }
  return out;
}

// "^{\circ}" and "^\circ" are degree marks (units), removed before "\circ" is.
std::string remove_degrees(std::string s) {
  for (std::string_view d : {"^{\\circ}", "^\\circ", "^{\\degree}", "^\\degree", "^{o}"}) s = replace_all(std::move(s), d, " ");
  return s;
}

// Whole words "and" / "or" separate answers: "1 and 2" is the list "1, 2".
std::string words_to_commas(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    if (is_alpha(s[i]) && (i == 0 || (!is_alpha(s[i - 1]) && s[i - 1] != '\\'))) {
      std::size_t j = i;
      while (j < s.size() && is_alpha(s[j])) ++j;
      std::string_view w = s.substr(i, j - i);
      if (w == "and" || w == "or") {
        out += ',';
      } else {
        out.append(w);
      }
      i = j;
      continue;
    }
    out += s[i++];
  }
  return out;
}

// Digit groups "1 000 000" (LaTeX ignores spaces in math mode) and, at bracket depth 0 when every
// top-level comma is one, "1,000,000".
std::string collapse_thousands(std::string s) {
  auto grouped_run = [&](std::size_t b, char sep, std::vector<std::size_t>* seps) -> std::size_t {
    // [1-9]\d{0,2}(sep\d{3})+ starting at b, not preceded by a digit or '.'; returns its end or npos.
    if (b > 0 && (is_digit(s[b - 1]) || s[b - 1] == '.')) return std::string::npos;
    if (s[b] < '1' || s[b] > '9') return std::string::npos;
    std::size_t d = b;
    while (d < s.size() && is_digit(s[d])) ++d;
    if (d - b > 3) return std::string::npos;
    std::size_t g = d;
    int groups = 0;
    while (g + 3 < s.size() && s[g] == sep && is_digit(s[g + 1]) && is_digit(s[g + 2]) && is_digit(s[g + 3]) &&
           !(g + 4 < s.size() && is_digit(s[g + 4]))) {
      if (seps) seps->push_back(g);
      g += 4;
      ++groups;
    }
    return groups > 0 ? g : std::string::npos;
  };
  // Spaces.
  {
    std::vector<std::size_t> seps;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (!is_digit(s[i])) continue;
      std::size_t e = grouped_run(i, ' ', &seps);
      if (e != std::string::npos) {
        i = e - 1;
      } else {
        while (i + 1 < s.size() && is_digit(s[i + 1])) ++i;
      }
    }
    if (!seps.empty()) {
      std::string out;
      std::size_t k = 0;
      for (std::size_t i = 0; i < s.size(); ++i) {
        if (k < seps.size() && seps[k] == i) {
          ++k;
          continue;
        }
        out += s[i];
      }
      s.swap(out);
    }
  }
  // Commas at depth 0.
  std::vector<std::size_t> top_commas, seps;
  int depth = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) top_commas.push_back(i);
  }
  if (top_commas.empty()) return s;
  depth = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (depth == 0 && is_digit(c)) {
      std::size_t e = grouped_run(i, ',', &seps);
      if (e != std::string::npos) {
        i = e - 1;
      } else {
        while (i + 1 < s.size() && is_digit(s[i + 1])) ++i;
      }
    }
  }
  if (seps.size() != top_commas.size()) return s;  // some comma separates answers: a list
  std::string out;
  std::size_t k = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (k < seps.size() && seps[k] == i) {
      ++k;
      continue;
    }
    out += s[i];
  }
  return out;
}

bool is_unit_word(std::string_view w) {
  static const std::initializer_list<std::string_view> kUnits = {
      "cm", "mm", "km", "m", "in", "inch", "inches", "ft", "feet", "foot", "yd", "yard", "yards", "mi", "mile",
      "miles", "meter", "meters", "metre", "metres", "centimeter", "centimeters", "millimeter", "millimeters",
      "kilometer", "kilometers", "unit", "units", "square", "sq", "cubic", "degree", "degrees", "deg", "radian",
      "radians", "rad", "dollar", "dollars", "cent", "cents", "hour", "hours", "hr", "hrs", "h", "minute",
      "minutes", "min", "mins", "second", "seconds", "sec", "secs", "s", "day", "days", "week", "weeks", "month",
      "months", "year", "years", "g", "kg", "mg", "gram", "grams", "kilogram", "kilograms", "lb", "lbs", "pound",
      "pounds", "ounce", "ounces", "oz", "liter", "liters", "litre", "litres", "ml", "mL", "gallon", "gallons",
      "mph", "per", "people", "persons", "students", "ways", "times", "points", "cups", "pages", "customers",
      "miles/hour", "km/h", "m/s"};
  return in_list(w, kUnits);
}

}  // namespace

std::string strip_trailing_units(std::string_view input) {
  std::string_view v = trim(input);
  while (!v.empty() && v.back() == '.') v = trim(v.substr(0, v.size() - 1));
  std::string percent;
  for (std::string_view w : {"percent", "Percent", "pct"}) {
    if (v.size() > w.size() && v.substr(v.size() - w.size()) == w && !is_alpha(v[v.size() - w.size() - 1])) {
      v = trim(v.substr(0, v.size() - w.size()));
      percent = "%";
      break;
    }
  }
  // The trailing run of unit words ("square units", "cm^2", "miles per hour").
  std::string_view rest = v;
  bool stripped = false;
  for (int guard = 0; guard < 8; ++guard) {
    std::string_view core = rest;
    for (std::string_view p : {"^{2}", "^{3}", "^2", "^3"}) {
      if (core.size() > p.size() && core.substr(core.size() - p.size()) == p) {
        core = trim(core.substr(0, core.size() - p.size()));
        break;
      }
    }
    std::size_t e = core.size(), b = e;
    while (b > 0 && (is_alpha(core[b - 1]) || core[b - 1] == '/')) --b;
    if (b == e || b == 0 || !is_space(core[b - 1]) || !is_unit_word(core.substr(b, e - b))) break;
    rest = trim(core.substr(0, b));
    stripped = true;
  }
  // Units follow a quantity: a digit, a closing brace/parenthesis, or a factorial.
  if (stripped && !rest.empty()) {
    const char last = rest.back();
    if (is_digit(last) || last == '}' || last == ')' || last == '!' || last == '%') v = rest;
  }
  return std::string(v) + percent;
}

std::string normalize_latex(std::string_view latex) {
  std::string s = replace_unicode(std::string(latex));
  // Math delimiters and currency.
  s = replace_all(std::move(s), "\\$", "");
  s.erase(std::remove(s.begin(), s.end(), '$'), s.end());
  for (std::string_view d : {"\\(", "\\)", "\\[", "\\]"}) s = replace_all(std::move(s), d, " ");
  s = remove_degrees(std::move(s));
  s = unwrap_commands(s);
  s = rewrite_commands(s);
  s = replace_all(std::move(s), "{,}", "");
  s = words_to_commas(s);
  s = strip_trailing_units(s);
  s = collapse_thousands(std::string(trim(s)));
  std::string_view v = trim(s);
  while (!v.empty() && (v.back() == '.' || v.back() == ';')) v = trim(v.substr(0, v.size() - 1));
  return std::string(v);
}

}  // namespace roll::reward
