#include "roll/reward/rule/ifeval_checks.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "roll/reward/rule/language_guess.h"
#include "roll/reward/rule/py_text.h"

namespace roll::reward {
namespace {

using rule::from_utf8;
using json = nlohmann::json;

// What Python would raise inside a check; the check then counts as failed.
struct PyRaise : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A number as Python compares it (int, float, or bool as 0/1); nullopt for None, str, list, dict.
std::optional<double> py_number(const json& v) {
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  if (v.is_number()) return v.get<double>();
  return std::nullopt;
}

// A number for an ordering comparison or arithmetic, where Python raises TypeError otherwise.
double ordered_number(const json& v, const char* what) {
  if (auto n = py_number(v)) return *n;
  throw PyRaise(std::string("TypeError: ") + what + " is a " + v.type_name() + ", not a number");
}

std::u32string str_arg(const json& v, const char* what) {
  if (!v.is_string()) throw PyRaise(std::string("TypeError: ") + what + " is a " + v.type_name() + ", not a str");
  return from_utf8(v.get_ref<const std::string&>());
}

// Iterating a Python value: a list's items, a str's characters, a dict's keys.
std::vector<json> iterate(const json& v, const char* what) {
  std::vector<json> out;
  if (v.is_array()) {
    for (const auto& e : v) out.push_back(e);
  } else if (v.is_string()) {
    for (char32_t c : from_utf8(v.get_ref<const std::string&>())) out.emplace_back(rule::to_utf8(std::u32string(1, c)));
  } else if (v.is_object()) {
    for (const auto& [k, e] : v.items()) out.emplace_back(k);
  } else {
    throw PyRaise(std::string("TypeError: ") + what + " (" + v.type_name() + ") is not iterable");
  }
  return out;
}

bool contains(std::u32string_view hay, std::u32string_view needle) {
  return hay.find(needle) != std::u32string_view::npos;
}
bool starts_with(std::u32string_view s, std::u32string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::u32string_view s, std::u32string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// The quantifier comparisons of the word and sentence checks; an unknown quantifier is False.
bool quantified(double actual, double n, const json& quantifier, double around_tolerance) {
  if (!quantifier.is_string()) return false;
  const std::string& q = quantifier.get_ref<const std::string&>();
  if (q == "at least") return actual >= n;
  if (q == "at most") return actual <= n;
  if (q == "around") return std::fabs(actual - n) <= around_tolerance;
  return false;
}

// Non-overlapping matches of open(.*?)close where `.` stops at '\n' (the placeholder, title and
// highlight patterns): how many there are.
size_t lazy_pair_matches(std::u32string_view t, std::u32string_view open, std::u32string_view close) {
  size_t n = 0, from = 0;
  for (size_t at = t.find(open, from); at != std::u32string_view::npos; at = t.find(open, from)) {
    const size_t body = at + open.size();
    size_t end = std::u32string_view::npos;
    for (size_t i = body; i + close.size() <= t.size(); ++i) {
      if (t.substr(i, close.size()) == close) {
        end = i;
        break;
      }
      if (t[i] == '\n') break;
    }
    if (end == std::u32string_view::npos) {
      from = at + 1;
      continue;
    }
    ++n;
    from = end + close.size();
  }
  return n;
}

// ----- the checks (text is the answer text, args the constraint) -----

bool verify_keywords(const std::u32string& text, const json& a) {
  const std::u32string lower = rule::py_lower(text);
  for (const json& k : iterate(a.at("keyword_list"), "keyword_list"))
    if (!contains(lower, rule::py_lower(str_arg(k, "a keyword")))) return false;
  return true;
}

// ROLL's version counts every word: its generator compares the loop variable with itself
// (`sum(1 for word in words if word == word)`), so the check is "the answer has N words" by
// \b\w+\b. `word` must still be a str (ROLL lowercases it first).
bool verify_keyword_frequency(const std::u32string& text, const json& a) {
  str_arg(a.at("word"), "word");
  const auto n = py_number(a.at("N"));
  return n && static_cast<double>(rule::word_runs(rule::py_lower(text)).size()) == *n;
}

bool validate_forbidden_words(const std::u32string& text, const json& a) {
  const std::u32string lower = rule::py_lower(text);
  bool found = false;
  for (const json& w : iterate(a.at("forbidden_words"), "forbidden_words"))  // every word is lowered
    found = contains(lower, rule::py_lower(str_arg(w, "a forbidden word"))) || found;
  return !found;
}

bool verify_letter_frequency(const std::u32string& text, const json& a) {
  const json& letter = a.at("letter");
  if (!letter.is_string() && !letter.is_array() && !letter.is_object())
    throw PyRaise(std::string("TypeError: len() of a ") + letter.type_name());
  if (!letter.is_string()) {
    if (letter.size() != 1) throw PyRaise("ValueError: letter must be one character");
    throw PyRaise("TypeError: str.count needs a str");
  }
  const std::u32string l = from_utf8(letter.get_ref<const std::string&>());
  if (l.size() != 1) throw PyRaise("ValueError: letter must be one character");
  const auto n = py_number(a.at("N"));
  return n && static_cast<double>(rule::py_count(text, l)) == *n;
}

bool validate_response_language(const std::u32string& text, const json& a) {
  const std::string detected = rule::guess_language(text);
  if (detected.empty()) throw PyRaise("LangDetectException: no features in text");
  const json& language = a.at("language");
  return language.is_string() && language.get_ref<const std::string&>() == detected;
}

bool verify_paragraph_count(const std::u32string& text, const json& a) {
  std::u32string cleaned;
  const auto lines = rule::py_splitlines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) cleaned.push_back('\n');
    cleaned += rule::py_strip(lines[i]);
  }
  const auto parts = rule::py_split(rule::py_strip(cleaned), U"* * *");
  for (const auto& p : parts)
    if (rule::py_strip(p).empty()) return false;
  const auto n = py_number(a.at("N"));
  return n && static_cast<double>(parts.size()) == *n;
}

bool validate_word_constraint(const std::u32string& text, const json& a) {
  const double actual = static_cast<double>(rule::py_split(rule::py_strip(text)).size());
  const double n = ordered_number(a.at("N"), "N");
  // max(round(N * 0.1), 1): Python's round is half-to-even, as nearbyint in the default mode.
  const double tolerance = std::max(std::nearbyint(n * 0.1), 1.0);
  return quantified(actual, n, a.at("quantifier"), tolerance);
}

bool verify_sentence_constraint(const std::u32string& text, const json& a) {
  const double actual = static_cast<double>(ifeval_sentence_count(rule::to_utf8(text)));
  const json& q = a.at("quantifier");
  if (!q.is_string()) return false;
  const std::string& qs = q.get_ref<const std::string&>();
  if (qs != "at least" && qs != "at most" && qs != "around") return false;
  return quantified(actual, ordered_number(a.at("N"), "N"), q, 1.0);
}

bool validate_paragraphs(const std::u32string& text, const json& a) {
  const auto paragraphs = rule::py_split(text, U"\n\n");
  const auto n = py_number(a.at("N"));
  if (!n || static_cast<double>(paragraphs.size()) != *n) return false;
  const json& i = a.at("i");
  if (!i.is_number_integer() && !i.is_boolean()) throw PyRaise("TypeError: list indices must be integers");
  int64_t idx = (i.is_boolean() ? (i.get<bool>() ? 1 : 0) : i.get<int64_t>()) - 1;
  const auto size = static_cast<int64_t>(paragraphs.size());
  if (idx < 0) idx += size;  // Python's negative index
  if (idx < 0 || idx >= size) throw PyRaise("IndexError: list index out of range");
  return starts_with(rule::py_strip(paragraphs[static_cast<size_t>(idx)]), str_arg(a.at("first_word"), "first_word"));
}

bool verify_postscript(const std::u32string& text, const json& a) {
  const std::u32string marker = str_arg(a.at("postscript_marker"), "postscript_marker");
  const size_t at = text.find(marker);
  if (at == std::u32string::npos) return false;
  return rule::py_strip(std::u32string_view(text).substr(at)).size() > marker.size();
}

bool validate_placeholders(const std::u32string& text, const json& a) {
  return static_cast<double>(lazy_pair_matches(text, U"[", U"]")) >= ordered_number(a.at("N"), "N");
}

bool verify_bullet_points(const std::u32string& text, const json& a) {
  size_t bullets = 0;
  for (const auto& line : rule::py_split(text, U"\n")) {
    const std::u32string s = rule::py_strip(line);
    if (!s.empty() && (s[0] == '*' || s[0] == '-')) ++bullets;
  }
  const auto n = py_number(a.at("N"));
  return n && static_cast<double>(bullets) == *n;
}

bool validate_title(const std::u32string& text, const json&) { return lazy_pair_matches(text, U"<<", U">>") > 0; }

bool validate_choice(const std::u32string& text, const json& a) {
  for (const json& option : iterate(a.at("options"), "options")) {
    if (option.is_string()) {
      if (contains(from_utf8(option.get_ref<const std::string&>()), text)) return true;
    } else if (option.is_array() || option.is_object()) {  // `text in list` / `in dict`: membership
      for (const json& item : iterate(option, "an option"))
        if (item.is_string() && from_utf8(item.get_ref<const std::string&>()) == text) return true;
    } else {
      throw PyRaise(std::string("TypeError: 'in' needs a container, not a ") + option.type_name());
    }
  }
  return false;
}

bool validate_highlighted_sections(const std::u32string& text, const json& a) {
  return static_cast<double>(lazy_pair_matches(text, U"*", U"*")) >= ordered_number(a.at("N"), "N");
}

bool validate_sections(const std::u32string& text, const json& a) {
  const std::u32string splitter = str_arg(a.at("section_splitter"), "section_splitter");
  if (splitter.empty()) throw PyRaise("ValueError: empty separator");
  auto sections = rule::py_split(text, splitter);
  if (sections.front().empty()) sections.erase(sections.begin());
  const auto n = py_number(a.at("N"));
  return n && static_cast<double>(sections.size()) == *n;
}

bool validate_json_format(const std::u32string& text, const json&) { return python_json_loads_ok(rule::to_utf8(text)); }

bool validate_repeat_prompt(const std::u32string& text, const json& a) {
  return starts_with(text, str_arg(a.at("original_prompt"), "original_prompt"));
}

bool validate_two_responses(const std::u32string& text, const json&) {
  if (rule::py_count(text, U"******") != 1) return false;
  const auto parts = rule::py_split(text, U"******");
  return rule::py_strip(parts[0]) != rule::py_strip(parts[1]);
}

bool validate_uppercase(const std::u32string& text, const json&) { return rule::py_equals_upper(text); }
bool validate_lowercase(const std::u32string& text, const json&) { return rule::py_equals_lower(text); }

// \b[A-Z]+\b: a whole \w run made of ASCII capitals only.
bool validate_frequency_capital_words(const std::u32string& text, const json& a) {
  size_t count = 0;
  for (const auto& w : rule::word_runs(text))
    if (std::all_of(w.begin(), w.end(), [](char32_t c) { return c >= 'A' && c <= 'Z'; })) ++count;
  const json& q = a.at("quantifier");
  if (!q.is_string()) return false;
  const std::string& qs = q.get_ref<const std::string&>();
  const double actual = static_cast<double>(count);
  if (qs == "around") {
    const auto n = py_number(a.at("N"));
    return n && actual == *n;
  }
  if (qs == "at least" || qs == "at most") return quantified(actual, ordered_number(a.at("N"), "N"), q, 0);
  return false;
}

bool validate_end(const std::u32string& text, const json& a) {
  return ends_with(text, str_arg(a.at("end_phrase"), "end_phrase"));
}

bool validate_quotation(const std::u32string& text, const json&) {
  return !text.empty() && text.front() == '"' && text.back() == '"';
}

bool validate_no_commas(const std::u32string& text, const json&) { return text.find(U',') == std::u32string::npos; }

struct IfevalFunction {
  std::string name;
  std::vector<std::string> params;  // after `text`; all required, as in ROLL's signatures
  std::function<bool(const std::u32string&, const json&)> check;
};

const std::vector<IfevalFunction>& functions() {
  static const std::vector<IfevalFunction> table = {
      {"verify_keywords", {"keyword_list"}, verify_keywords},
      {"verify_keyword_frequency", {"word", "N"}, verify_keyword_frequency},
      {"validate_forbidden_words", {"forbidden_words"}, validate_forbidden_words},
      {"verify_letter_frequency", {"letter", "N"}, verify_letter_frequency},
      {"validate_response_language", {"language"}, validate_response_language},
      {"verify_paragraph_count", {"N"}, verify_paragraph_count},
      {"validate_word_constraint", {"N", "quantifier"}, validate_word_constraint},
      {"verify_sentence_constraint", {"N", "quantifier"}, verify_sentence_constraint},
      {"validate_paragraphs", {"N", "first_word", "i"}, validate_paragraphs},
      {"verify_postscript", {"postscript_marker"}, verify_postscript},
      {"validate_placeholders", {"N"}, validate_placeholders},
      {"verify_bullet_points", {"N"}, verify_bullet_points},
      {"validate_title", {}, validate_title},
      {"validate_choice", {"options"}, validate_choice},
      {"validate_highlighted_sections", {"N"}, validate_highlighted_sections},
      {"validate_sections", {"N", "section_splitter"}, validate_sections},
      {"validate_json_format", {}, validate_json_format},
      {"validate_repeat_prompt", {"original_prompt"}, validate_repeat_prompt},
      {"validate_two_responses", {}, validate_two_responses},
      {"validate_uppercase", {}, validate_uppercase},
      {"validate_lowercase", {}, validate_lowercase},
      {"validate_frequency_capital_words", {"N", "quantifier"}, validate_frequency_capital_words},
      {"validate_end", {"end_phrase"}, validate_end},
      {"validate_quotation", {}, validate_quotation},
      {"validate_no_commas", {}, validate_no_commas},
  };
  return table;
}

const IfevalFunction* find_function(std::string_view name) {
  for (const auto& f : functions())
    if (f.name == name) return &f;
  return nullptr;
}

// ----- json.loads -----

class PyJsonScanner {
 public:
  explicit PyJsonScanner(std::string_view s) : s_(s) {}

  bool document() {
    skip_ws();
    if (!value(0)) return false;
    skip_ws();
    return i_ == s_.size();
  }

 private:
  static constexpr int kMaxDepth = 990;

  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }
  static bool digit(char c) { return c >= '0' && c <= '9'; }
  static bool hex(char c) { return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

  bool value(int depth) {
    if (i_ >= s_.size()) return false;
    switch (s_[i_]) {
      case '{': return object(depth + 1);
      case '[': return array(depth + 1);
      case '"': return string();
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      case 'N': return literal("NaN");
      case 'I': return literal("Infinity");
      case '-':
        if (s_.substr(i_, 9) == "-Infinity") return literal("-Infinity");
        return number();
      default: return digit(s_[i_]) && number();
    }
  }

  bool number() {
    if (s_[i_] == '-') ++i_;
    if (i_ >= s_.size() || !digit(s_[i_])) return false;
    if (s_[i_] == '0') {
      ++i_;
    } else {
      while (i_ < s_.size() && digit(s_[i_])) ++i_;
    }
    // A '.' or 'e' without digits ends the number before it; what follows is then an error in
    // every context, so rejecting here gives the same answer.
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (i_ >= s_.size() || !digit(s_[i_])) return false;
      while (i_ < s_.size() && digit(s_[i_])) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (i_ >= s_.size() || !digit(s_[i_])) return false;
      while (i_ < s_.size() && digit(s_[i_])) ++i_;
    }
    return true;
  }

  bool string() {
    ++i_;  // the opening quote
    while (i_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c < 0x20) return false;  // strict mode: no raw control characters
      if (c == '\\') {
        if (++i_ >= s_.size()) return false;
        const char e = s_[i_];
        if (e == 'u') {
          for (int k = 1; k <= 4; ++k)
            if (i_ + static_cast<size_t>(k) >= s_.size() || !hex(s_[i_ + static_cast<size_t>(k)])) return false;
          i_ += 5;
          continue;
        }
        if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' && e != 't') return false;
      }
      ++i_;
    }
    return false;
  }

  bool array(int depth) {
    if (depth > kMaxDepth) return false;
    ++i_;
    skip_ws();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return true;
    }
    while (true) {
      skip_ws();
      if (!value(depth)) return false;
      skip_ws();
      if (i_ >= s_.size()) return false;
      if (s_[i_] == ']') {
        ++i_;
        return true;
      }
      if (s_[i_++] != ',') return false;
    }
  }

  bool object(int depth) {
    if (depth > kMaxDepth) return false;
    ++i_;
    skip_ws();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return true;
    }
    while (true) {
      skip_ws();
      if (i_ >= s_.size() || s_[i_] != '"' || !string()) return false;
      skip_ws();
      if (i_ >= s_.size() || s_[i_++] != ':') return false;
      skip_ws();
      if (!value(depth)) return false;
      skip_ws();
      if (i_ >= s_.size()) return false;
      if (s_[i_] == '}') {
        ++i_;
        return true;
      }
      if (s_[i_++] != ',') return false;
    }
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

const std::vector<std::string>& ifeval_function_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& f : functions()) n.push_back(f.name);
    return n;
  }();
  return names;
}

bool is_ifeval_function(std::string_view name) { return find_function(name) != nullptr; }

IfevalCheckResult run_ifeval_check(std::string_view func_name, std::string_view text, const json& args) {
  IfevalCheckResult r;
  const IfevalFunction* f = find_function(func_name);
  if (!f) {
    r.error = "unknown function '" + std::string(func_name) + "'";
    return r;
  }
  if (!args.is_object()) {
    r.error = "the constraint is not an object";
    return r;
  }
  if (args.contains("text")) {  // func(text, text=...) raises
    r.error = "TypeError: got multiple values for argument 'text'";
    return r;
  }
  for (const auto& p : f->params)
    if (!args.contains(p)) {
      r.error = "TypeError: missing required argument '" + p + "'";
      return r;
    }
  try {
    r.passed = f->check(from_utf8(text), args);
  } catch (const PyRaise& e) {
    r.error = e.what();
  }
  return r;
}

size_t ifeval_sentence_count(std::string_view text) {
  const std::u32string t = from_utf8(text);
  auto upper = [](char32_t c) { return c >= 'A' && c <= 'Z'; };
  auto lower = [](char32_t c) { return c >= 'a' && c <= 'z'; };
  size_t pieces = 1;
  for (size_t p = 1; p < t.size(); ++p) {
    if (!rule::py_isspace(t[p]) || (t[p - 1] != '.' && t[p - 1] != '?')) continue;
    // (?<!\w\.\w.): not "x.y?" just before (the last `.` of the pattern matches any non-newline).
    if (p >= 4 && rule::py_isword(t[p - 4]) && t[p - 3] == '.' && rule::py_isword(t[p - 2])) continue;
    // (?<![A-Z][a-z]\.): not an abbreviation such as "Mr."
    if (p >= 3 && upper(t[p - 3]) && lower(t[p - 2]) && t[p - 1] == '.') continue;
    ++pieces;
  }
  return pieces;
}

bool python_json_loads_ok(std::string_view text) { return PyJsonScanner(text).document(); }

}  // namespace roll::reward
