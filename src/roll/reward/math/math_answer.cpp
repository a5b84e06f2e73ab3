// Answer extraction (docs/rewards.md steps 1-2). Every scan here is linear in the text: responses can be
// megabytes long and the worker side runs this without a time limit.
#include "roll/reward/math/math_answer.h"

#include <algorithm>
#include <cctype>

namespace roll::reward {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Python's str.strip() for ASCII whitespace.
std::string_view strip(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::size_t count_of(std::string_view s, std::string_view what) {
  std::size_t n = 0;
  for (std::size_t p = s.find(what); p != std::string_view::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

}  // namespace

std::string remove_special_tokens(std::string_view text) {
  std::string out(text);
  for (std::string_view tok : {std::string_view("<|endoftext|>"), std::string_view("<pad>")}) {
    std::string next;
    next.reserve(out.size());
    std::size_t from = 0;
    for (std::size_t p = out.find(tok); p != std::string::npos; p = out.find(tok, from)) {
      next.append(out, from, p - from);
      from = p + tok.size();
    }
    next.append(out, from, std::string::npos);
    out.swap(next);
  }
  return out;
}

std::string extract_after_last_end_think(std::string_view response, std::string_view prompt) {
  constexpr std::string_view kStart = "<think>", kEnd = "</think>";
  std::string_view p = prompt;
  while (!p.empty() && p.back() == '\n') p.remove_suffix(1);
  const bool prompt_opens_think = p.size() >= kStart.size() && p.substr(p.size() - kStart.size()) == kStart;
  if (count_of(response, kEnd) > 1) return "";
  if (prompt_opens_think) {
    if (response.find(kStart) != std::string_view::npos) return "";
  } else {
    // "<think>" is allowed only as the very first thing in the response.
    for (std::size_t q = response.find(kStart); q != std::string_view::npos; q = response.find(kStart, q + 1))
      if (q != 0) return "";
  }
  if (std::size_t e = response.rfind(kEnd); e != std::string_view::npos)
    return std::string(strip(response.substr(e + kEnd.size())));
  // Quirk 14 (reproduced): without </think> the answer must follow the last blank line.
  if (std::size_t nn = response.rfind("\n\n"); nn != std::string_view::npos)
    return std::string(strip(response.substr(nn + 2)));
  return "";
}

std::optional<std::string> extract_last_boxed(std::string_view text) {
  const std::size_t a = text.rfind("\\boxed{");
  const std::size_t b = text.rfind("\\boxed\\{");
  std::size_t start;
  std::size_t open_len;
  if (a == std::string_view::npos && b == std::string_view::npos) return std::nullopt;
  if (b == std::string_view::npos || (a != std::string_view::npos && a > b)) {
    start = a;
    open_len = 7;
  } else {
    start = b;
    open_len = 8;
  }
  const std::size_t content = start + open_len;
  int depth = 1;
  bool in_quotes = false;
  for (std::size_t i = content; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      in_quotes = !in_quotes;
    } else if (!in_quotes) {
      if (c == '{') {
        ++depth;
      } else if (c == '}' && --depth == 0) {
        std::string_view inner = text.substr(content, i - content);
        // "\boxed\{1,2\}": the closing brace is the escaped one; drop its backslash.
        if (open_len == 8 && !inner.empty() && inner.back() == '\\') inner.remove_suffix(1);
        return std::string(inner);
      }
    }
  }
  return std::nullopt;
}

SelectedAnswer select_answer(std::string_view response, std::string_view prompt) {
  SelectedAnswer out;
  std::string region = extract_after_last_end_think(response, prompt);
  if (region.empty()) return out;
  if (auto boxed = extract_last_boxed(region)) {
    out.text = std::move(*boxed);
    out.form = AnswerForm::kLatex;
    return out;
  }
  out.text = std::move(region);
  out.form = AnswerForm::kText;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Candidate formulas in free text.
namespace {

struct Scan {
  std::string_view t;
  std::vector<AnswerCandidate>* out;

  bool escaped(std::size_t i) const { return i > 0 && t[i - 1] == '\\'; }

  // A percent suffix after position i: \s*(\\?%|percent|percentage|pct). Returns its end or npos.
  std::size_t percent_after(std::size_t i) const {
    std::size_t j = i;
    while (j < t.size() && is_space(t[j])) ++j;
    if (j < t.size() && t[j] == '%') return j + 1;
    if (j + 1 < t.size() && t[j] == '\\' && t[j + 1] == '%') return j + 2;
    for (std::string_view w : {"percentage", "Percentage", "percent", "Percent", "pct", "Pct"})
      if (t.substr(j, w.size()) == w) return j + w.size();
    return std::string_view::npos;
  }

  void add_latex(std::size_t begin, std::size_t end, std::string_view content) {
    if (strip(content).empty()) return;
    AnswerCandidate c;
    c.text = std::string(content);
    if (std::size_t pe = percent_after(end); pe != std::string_view::npos) {
      c.text += "\\%";
      end = pe;
    }
    c.latex = true;
    c.begin = begin;
    c.end = end;
    out->push_back(std::move(c));
  }

  // A simple number for the bare \frac{a}{b} form: -?\d+([.,]\d+)?
  static bool simple_number(std::string_view s) {
    std::size_t i = 0;
    if (i < s.size() && s[i] == '-') ++i;
    std::size_t d = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    if (i == d) return false;
    if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
      ++i;
      std::size_t f = i;
      while (i < s.size() && is_digit(s[i])) ++i;
      if (i == f) return false;
    }
    return i == s.size();
  }

  void latex_envs() {
    bool no_more_display = false, no_more_bracket = false;
    std::size_t no_paren_before = 0;
    std::size_t i = 0;
    while (i < t.size()) {
      const char c = t[i];
      if (c == '$' && !escaped(i)) {
        if (i + 1 < t.size() && t[i + 1] == '$') {
          if (!no_more_display) {
            std::size_t close = i + 2;
            for (;;) {
              close = t.find("$$", close);
              if (close == std::string_view::npos || !escaped(close)) break;
              ++close;
            }
            if (close == std::string_view::npos) {
              no_more_display = true;
            } else if (close > i + 2) {
              add_latex(i, close + 2, t.substr(i + 2, close - i - 2));
              i = close + 2;
              continue;
            }
          }
        } else if (i == 0 || !is_digit(t[i - 1])) {
          // Inline: one line, content without unescaped '$'.
          std::size_t j = i + 1;
          while (j < t.size() && t[j] != '\n' && !(t[j] == '$' && !escaped(j))) ++j;
          if (j < t.size() && t[j] == '$' && j > i + 1) {
            add_latex(i, j + 1, t.substr(i + 1, j - i - 1));
            i = j + 1;
            continue;
          }
        }
      } else if (c == '\\' && i + 1 < t.size() && !escaped(i)) {
        const char n = t[i + 1];
        if (n == '[' && !no_more_bracket) {
          std::size_t close = t.find("\\]", i + 2);
          if (close == std::string_view::npos) {
            no_more_bracket = true;
          } else if (close > i + 2) {
            add_latex(i, close + 2, t.substr(i + 2, close - i - 2));
            i = close + 2;
            continue;
          }
        } else if (n == '(' && i >= no_paren_before) {
          std::size_t j = i + 2;
          while (j + 1 < t.size() && t[j] != '\n' && !(t[j] == '\\' && t[j + 1] == ')')) ++j;
          if (j + 1 < t.size() && t[j] == '\\' && t[j + 1] == ')' && j > i + 2) {
            add_latex(i, j + 2, t.substr(i + 2, j - i - 2));
            i = j + 2;
            continue;
          }
          no_paren_before = j;  // no closer before the end of this line: skip openers up to it
        } else if (t.substr(i, 6) == "\\frac{") {
          // Bare -?\frac{number}{number} (short numbers: the closing braces are searched nearby).
          std::size_t b1 = i + 6, e1 = t.substr(0, std::min(t.size(), b1 + 33)).find('}', b1);
          if (e1 != std::string_view::npos && e1 + 1 < t.size() && t[e1 + 1] == '{') {
            std::size_t b2 = e1 + 2, e2 = t.substr(0, std::min(t.size(), b2 + 33)).find('}', b2);
            if (e2 != std::string_view::npos && simple_number(t.substr(b1, e1 - b1)) &&
                simple_number(t.substr(b2, e2 - b2))) {
              std::size_t begin = (i > 0 && t[i - 1] == '-') ? i - 1 : i;
              add_latex(begin, e2 + 1, t.substr(begin, e2 + 1 - begin));
              i = e2 + 1;
              continue;
            }
          }
        }
      }
      ++i;
    }
  }

  bool anchor_before(std::size_t p) const {
    if (p == 0) return true;
    std::size_t q = p;
    if (q >= 2 && t[q - 1] == '*' && t[q - 2] == '*') q -= 2;  // **bold**
    return q == 0 || is_space(t[q - 1]) || t[q - 1] == '=';
  }

  static bool currency(char c) { return c == '$'; }

  // math_verify's number pattern (thousands separators, decimal point or comma, percent), written as
  // a scanner. The candidate text is the canonical number ("1,234.5" -> "1234.5", "12,5" -> "12.5").
  void numbers() {
    std::size_t i = 0;
    while (i < t.size()) {
      std::size_t start = i;
      // Optional currency sign, then optional '-', then a digit or ".digit".
      std::size_t p = i;
      if (currency(t[p])) ++p;
      std::size_t num_begin = p;
      if (p < t.size() && t[p] == '-') ++p;
      bool starts_number = p < t.size() && (is_digit(t[p]) || (t[p] == '.' && p + 1 < t.size() && is_digit(t[p + 1]) && t[num_begin] != '-'));
      if (!starts_number || !anchor_before(start) || (start > 0 && is_digit(t[start - 1]))) {
        ++i;
        continue;
      }
      const bool neg = t[num_begin] == '-';
      std::string canon = neg ? "-" : "";
      std::size_t q = p;
      if (t[q] == '.') {
        // ".123"
        std::size_t f = q + 1;
        while (f < t.size() && is_digit(t[f])) ++f;
        canon += "0" + std::string(t.substr(q, f - q));
        q = f;
      } else {
        std::size_t d = q;
        while (d < t.size() && is_digit(t[d])) ++d;
        const std::size_t int_len = d - q;
        // Thousands groups: [1-9]\d{0,2}([ ,]\d{3})+ (with exactly 3 digits and no 4th).
        std::size_t g = d;
        int groups = 0;
        if (int_len <= 3 && t[q] != '0') {
          while (g + 3 < t.size() && (t[g] == ',' || t[g] == ' ') && is_digit(t[g + 1]) && is_digit(t[g + 2]) &&
                 is_digit(t[g + 3]) && !(g + 4 < t.size() && is_digit(t[g + 4]))) {
            g += 4;
            ++groups;
          }
        }
        if (groups > 0) {
          for (std::size_t k = q; k < g; ++k)
            if (is_digit(t[k])) canon += t[k];
          q = g;
          if (q + 1 < t.size() && t[q] == '.' && is_digit(t[q + 1])) {
            std::size_t f = q + 1;
            while (f < t.size() && is_digit(t[f])) ++f;
            canon += std::string(t.substr(q, f - q));
            q = f;
          }
        } else {
          canon += std::string(t.substr(q, int_len));
          q = d;
          if (q + 1 < t.size() && (t[q] == '.' || t[q] == ',') && is_digit(t[q + 1])) {
            std::size_t f = q + 1;
            while (f < t.size() && is_digit(t[f])) ++f;
            canon += "." + std::string(t.substr(q + 1, f - q - 1));
            q = f;
          }
        }
      }
      AnswerCandidate c;
      c.text = canon;
      if (std::size_t pe = percent_after(q); pe != std::string_view::npos) {
        c.text += "%";
        q = pe;
      }
      c.begin = num_begin;
      c.end = q;
      out->push_back(std::move(c));
      i = q;
    }
  }

  static bool expr_char(char c) {
    return is_digit(c) || c == '.' || is_space(c) || c == '+' || c == '-' || c == '*' || c == '/' || c == '^' ||
           c == '(' || c == ')';
  }
  static bool expr_op(char c) { return c == '+' || c == '-' || c == '*' || c == '/' || c == '^' || c == '(' || c == ')'; }
  bool expr_suffix(std::size_t e) const {
    if (e >= t.size()) return true;
    std::size_t k = e;
    if (k + 1 < t.size() && t[k] == '*' && t[k + 1] == '*') k += 2;
    if (k >= t.size()) return true;
    const char c = t[k];
    return c == '.' || c == ',' || c == ':' || is_space(c) || c == ')' || c == '$';
  }

  // Plain arithmetic expressions: -?\(?-?\d[chars]*[op][chars]+\)? with anchors on both sides
  // (math_verify's expr pattern); non-overlapping, left to right.
  void expressions() {
    std::size_t i = 0;
    while (i < t.size()) {
      if (!anchor_before(i)) {
        ++i;
        continue;
      }
      std::size_t p = i;
      if (p < t.size() && t[p] == '-') ++p;
      if (p < t.size() && t[p] == '(') ++p;
      if (p < t.size() && t[p] == '-') ++p;
      if (p >= t.size() || !is_digit(t[p])) {
        ++i;
        continue;
      }
      std::size_t e = p + 1;
      while (e < t.size() && expr_char(t[e])) ++e;
      // Backtrack until an anchor suffix follows and an operator precedes at least one more char.
      std::size_t found = std::string_view::npos;
      for (std::size_t end = e; end > p + 1; --end) {
        if (!expr_suffix(end)) continue;
        bool has_op = false;
        for (std::size_t k = p + 1; k + 1 < end && !has_op; ++k) has_op = expr_op(t[k]);
        if (has_op) found = end;
        break;  // the longest anchored end decides; shorter ones only lose operators
      }
      if (found == std::string_view::npos) {
        i = e;
        continue;
      }
      std::string_view text = strip(t.substr(i, found - i));
      AnswerCandidate c;
      c.text = std::string(text);
      c.begin = i;
      c.end = found;
      out->push_back(std::move(c));
      i = found;
    }
  }
};

bool iequal_at(std::string_view t, std::size_t p, std::string_view w) {
  if (p + w.size() > t.size()) return false;
  for (std::size_t k = 0; k < w.size(); ++k)
    if (std::tolower(static_cast<unsigned char>(t[p + k])) != w[k]) return false;
  return true;
}

}  // namespace

std::vector<AnswerCandidate> find_answer_candidates(std::string_view region, std::size_t max_candidates) {
  std::vector<AnswerCandidate> cands;
  Scan scan{region, &cands};
  scan.latex_envs();
  scan.numbers();
  scan.expressions();
  if (cands.empty()) return cands;

  // Anchors: the first candidate after "answer" (within 50 chars; 100 with a colon for '=' forms)
  // gets priority 200 (100 with "answer:"); the one after "final answer ... is" gets 50.
  // Candidates come from three left-to-right scans; order them by start for the anchor lookups
  // (only when the text has an anchor word at all).
  std::vector<std::size_t> by_begin;
  bool has_anchor = false;
  for (std::size_t p = 0; p + 6 <= region.size() && !has_anchor; ++p)
    has_anchor = (region[p] | 0x20) == 'a' && iequal_at(region, p, "answer");
  if (has_anchor) {
    by_begin.resize(cands.size());
    for (std::size_t k = 0; k < cands.size(); ++k) by_begin[k] = k;
    std::sort(by_begin.begin(), by_begin.end(), [&](std::size_t a, std::size_t b) {
      return cands[a].begin != cands[b].begin ? cands[a].begin < cands[b].begin : cands[a].end > cands[b].end;
    });
  }
  auto first_at_or_after = [&](std::size_t pos) {
    return std::lower_bound(by_begin.begin(), by_begin.end(), pos,
                            [&](std::size_t k, std::size_t p) { return cands[k].begin < p; });
  };
  std::string_view t = region;
  for (std::size_t p = 0; has_anchor && p + 6 <= t.size(); ++p) {
    if ((t[p] | 0x20) != 'a' || !iequal_at(t, p, "answer")) continue;
    const std::size_t after = p + 6;
    const bool colon = after < t.size() && t[after] == ':';
    const std::size_t from = colon ? after + 1 : after;
    // "final answer.{0,100}?\s+is:?\s*X"
    if (p >= 6 && iequal_at(t, p - 6, "final ")) {
      for (std::size_t q = after; q < t.size() && q <= after + 101; ++q) {
        if (!is_space(t[q]) || !iequal_at(t, q + 1, "is")) continue;
        std::size_t r = q + 3;
        if (r < t.size() && t[r] == ':') ++r;
        while (r < t.size() && is_space(t[r])) ++r;
        for (auto it = first_at_or_after(q + 3); it != by_begin.end() && cands[*it].begin <= r; ++it)
          if (cands[*it].begin >= q + 3) cands[*it].priority = std::min(cands[*it].priority, 50);
        break;
      }
    }
    // "answer(:)?.{0,50}?X": the first candidate starting within 50 chars.
    auto it = first_at_or_after(from);
    if (it != by_begin.end() && cands[*it].begin <= from + 50)
      cands[*it].priority = std::min(cands[*it].priority, colon ? 100 : 200);
  }

  // Only the first max_candidates are ever tried: partial sort (ties keep scan order).
  std::vector<std::size_t> order(cands.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  const std::size_t keep = std::min(max_candidates, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(),
                    [&](std::size_t x, std::size_t y) {
                      const AnswerCandidate &a = cands[x], &b = cands[y];
                      if (a.priority != b.priority) return a.priority < b.priority;
                      if (a.end != b.end) return a.end > b.end;
                      if (a.begin != b.begin) return a.begin < b.begin;
                      return x < y;
                    });
  std::vector<AnswerCandidate> out;
  out.reserve(keep);
  for (std::size_t k = 0; k < keep; ++k) out.push_back(std::move(cands[order[k]]));
  return out;
}

}  // namespace roll::reward
