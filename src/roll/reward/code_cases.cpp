#include "roll/reward/code_cases.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "roll/core/error.h"

namespace roll::reward {
namespace {

constexpr std::string_view kWhitespace = " \t\n\r\f\v";

std::string_view strip(std::string_view s) {
  const size_t b = s.find_first_not_of(kWhitespace);
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(kWhitespace);
  return s.substr(b, e - b + 1);
}

std::string_view rstrip(std::string_view s) {
  const size_t e = s.find_last_not_of(kWhitespace);
  return e == std::string_view::npos ? std::string_view{} : s.substr(0, e + 1);
}

// Drops whole blank lines at the start (indentation of the first code line stays).
std::string_view drop_leading_blank_lines(std::string_view s) {
  size_t pos = 0;
  for (;;) {
    const size_t nl = s.find('\n', pos);
    if (nl == std::string_view::npos) break;
    if (strip(s.substr(pos, nl - pos)).empty()) pos = nl + 1;
    else break;
  }
  return s.substr(pos);
}

std::vector<std::string_view> split_lines(std::string_view s) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  for (;;) {
    const size_t nl = s.find('\n', pos);
    if (nl == std::string_view::npos) {
      out.push_back(s.substr(pos));
      return out;
    }
    out.push_back(s.substr(pos, nl - pos));
    pos = nl + 1;
  }
}

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Python's Decimal(token), reduced to a canonical value for equality: sign, significant digits
// without leading or trailing zeros, and the exponent of the last digit. nullopt when the token is
// not a finite or infinite decimal (NaN never equals anything, so it is treated as text).
struct DecimalValue {
  bool negative = false;
  bool infinite = false;
  std::string digits;  // "" for zero
  int64_t exponent = 0;
  bool operator==(const DecimalValue&) const = default;
};

std::optional<DecimalValue> parse_decimal(std::string_view t) {
  DecimalValue v;
  size_t i = 0;
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) v.negative = t[i++] == '-';
  std::string rest;
  for (size_t k = i; k < t.size(); ++k) rest += static_cast<char>(std::tolower(static_cast<unsigned char>(t[k])));
  if (rest == "inf" || rest == "infinity") {
    v.infinite = true;
    return v;
  }
  std::string mantissa;
  int64_t frac_digits = 0;
  bool seen_dot = false, seen_digit = false;
  char prev = 0;
  for (; i < t.size(); ++i) {
    const char c = t[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      mantissa += c;
      if (seen_dot) ++frac_digits;
      seen_digit = true;
    } else if (c == '_' && std::isdigit(static_cast<unsigned char>(prev)) && i + 1 < t.size() &&
               std::isdigit(static_cast<unsigned char>(t[i + 1]))) {
      // PEP 515 underscores between digits
    } else if (c == '.' && !seen_dot) {
      seen_dot = true;
    } else {
      break;
    }
    prev = c;
  }
  if (!seen_digit) return std::nullopt;
  int64_t exponent = 0;
  if (i < t.size()) {
    if (t[i] != 'e' && t[i] != 'E') return std::nullopt;
    ++i;
    bool neg = false;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) neg = t[i++] == '-';
    if (i >= t.size()) return std::nullopt;
    for (; i < t.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(t[i]))) return std::nullopt;
      if (exponent > (int64_t{1} << 50)) return std::nullopt;  // beyond any sane output
      exponent = exponent * 10 + (t[i] - '0');
    }
    if (neg) exponent = -exponent;
  }
  size_t first = mantissa.find_first_not_of('0');
  if (first == std::string::npos) {  // zero, whatever its sign or exponent
    v.negative = false;
    return v;
  }
  size_t last = mantissa.find_last_not_of('0');
  v.digits = mantissa.substr(first, last - first + 1);
  v.exponent = exponent - frac_digits + static_cast<int64_t>(mantissa.size() - 1 - last);
  return v;
}

std::optional<std::vector<DecimalValue>> decimal_line(std::string_view line) {
  std::vector<DecimalValue> out;
  size_t pos = 0;
  while (pos < line.size()) {
    const size_t b = line.find_first_not_of(kWhitespace, pos);
    if (b == std::string_view::npos) break;
    size_t e = line.find_first_of(kWhitespace, b);
    if (e == std::string_view::npos) e = line.size();
    auto v = parse_decimal(line.substr(b, e - b));
    if (!v) return std::nullopt;
    out.push_back(*v);
    pos = e;
  }
  return out;
}

std::string json_text(const nlohmann::json& j) {
  return j.is_string() ? j.get<std::string>() : j.dump();
}

}  // namespace

std::string_view base_imports() {
  static const std::string text =
      "from string import *\nfrom re import *\nfrom datetime import *\nfrom collections import *\n"
      "from heapq import *\nfrom bisect import *\nfrom copy import *\nfrom math import *\n"
      "from random import *\nfrom statistics import *\nfrom itertools import *\n"
      "from functools import *\nfrom operator import *\nfrom io import *\nfrom sys import *\n"
      "from json import *\nfrom builtins import *\nfrom typing import *\n"
      "import string\nimport re\nimport datetime\nimport collections\nimport heapq\nimport bisect\n"
      "import copy\nimport math\nimport random\nimport statistics\nimport itertools\n"
      "import functools\nimport operator\nimport io\nimport sys\nimport json\n"
      "sys.setrecursionlimit(6*10**5)\n"
      "from typing import List, Dict, Any, Optional, Tuple\nfrom math import inf\n";
  return text;
}

std::string strip_reasoning(std::string_view response) {
  std::string_view s = response;
  for (std::string_view marker : {std::string_view("<|begin_of_solution|>"), std::string_view("</think>")}) {
    const size_t at = s.rfind(marker);
    if (at != std::string_view::npos) s = strip(s.substr(at + marker.size()));
  }
  return std::string(s);
}

std::vector<std::string> fenced_blocks(std::string_view text) {
  std::vector<std::string> blocks;
  std::optional<std::string> unterminated;
  size_t pos = 0;
  for (;;) {
    const size_t open = text.find("```", pos);
    if (open == std::string_view::npos) break;
    const size_t nl = text.find('\n', open + 3);
    if (nl == std::string_view::npos) break;
    const std::string_view info = text.substr(open + 3, nl - open - 3);
    if (info.find('`') != std::string_view::npos) {  // "``` ```" on one line: not an opening fence
      pos = open + 3;
      continue;
    }
    const size_t close = text.find("```", nl + 1);
    if (close == std::string_view::npos) {
      unterminated = std::string(rstrip(drop_leading_blank_lines(text.substr(nl + 1))));
      break;
    }
    blocks.emplace_back(rstrip(drop_leading_blank_lines(text.substr(nl + 1, close - nl - 1))));
    pos = close + 3;
  }
  if (blocks.empty() && unterminated) blocks.push_back(*unterminated);
  return blocks;
}

std::string extract_code(std::string_view text) {
  if (text.find("```") == std::string_view::npos) return std::string(strip(text));
  const auto blocks = fenced_blocks(text);
  for (const auto& b : blocks)
    if (b.find("def ") != std::string::npos) return b;
  return blocks.empty() ? std::string() : blocks.front();
}

std::string pytest_runner(std::string_view assert_code) {
  if (assert_code.find("def test_") == std::string_view::npos) return "";
  // Top-level test functions and Test* classes, in the order they are defined.
  std::vector<std::string> names;
  for (std::string_view line : split_lines(assert_code)) {
    std::string_view rest;
    if (line.rfind("def test_", 0) == 0) rest = line.substr(4);
    else if (line.rfind("class Test", 0) == 0) rest = line.substr(6);
    else continue;
    size_t n = 0;
    while (n < rest.size() && is_identifier_char(rest[n])) ++n;
    if (n > 0) names.emplace_back(rest.substr(0, n));
  }
  std::string runner = "\n\n# test runner: call every test function, and test_* methods of Test* classes\n";
  runner += "for _roll_test in (";
  for (const auto& n : names) runner += n + ", ";
  runner +=
      "):\n"
      "    if isinstance(_roll_test, type):\n"
      "        _roll_obj = _roll_test()\n"
      "        for _roll_name in [m for m in vars(_roll_test) if m.startswith('test_')]:\n"
      "            getattr(_roll_obj, _roll_name)()\n"
      "    else:\n"
      "        _roll_test()\n";
  return runner;
}

std::string assert_program(std::string_view code, std::string_view assert_code) {
  std::string p(base_imports());
  p += "\n";
  p += code;
  p += "\n";
  p += assert_code;
  p += pytest_runner(assert_code);
  p += "\n";
  return p;
}

std::string case_assert_code(const nlohmann::json& test_case) {
  if (test_case.is_string()) return test_case.get<std::string>();
  if (test_case.is_object() && test_case.contains("assert_code") && test_case["assert_code"].is_string())
    return test_case["assert_code"].get<std::string>();
  throw Error(fmt::format("test case {} has no assert_code string", test_case.dump().substr(0, 200)));
}

std::vector<std::string> check_based_programs(std::string_view code, const nlohmann::json& tc) {
  const std::string assert_code = case_assert_code(tc);
  std::string entry_point = "candidate", import_prefix;
  if (tc.is_object()) {
    if (tc.contains("entry_point") && !tc["entry_point"].is_null()) entry_point = json_text(tc["entry_point"]);
    if (tc.contains("import_prefix") && !tc["import_prefix"].is_null()) import_prefix = json_text(tc["import_prefix"]);
  }
  std::vector<std::string_view> lines;
  for (std::string_view l : split_lines(assert_code))
    if (!l.empty()) lines.push_back(l);
  if (lines.empty()) throw Error("check_based test case has an empty assert_code");
  // ROLL builds import_prefix + (BASE_IMPORTS + code): a `from __future__` prefix stays first.
  std::string solution = import_prefix + std::string(base_imports()) + std::string(code);
  std::vector<std::string> programs;
  const std::string call = fmt::format("\ncheck({})", entry_point);
  if (lines.size() == 1) {
    programs.push_back(solution + "\n" + std::string(lines[0]) + call);
  } else {
    for (size_t i = 1; i < lines.size(); ++i)
      programs.push_back(solution + "\n" + std::string(lines[0]) + "\n" + std::string(lines[i]) + call);
  }
  return programs;
}

std::string text_program(std::string_view response, std::string_view assert_code) {
  const std::string quoted = "'''" + std::string(response) + "'''";
  std::string body(assert_code);
  const std::string_view key = "{response}";
  for (size_t at = body.find(key); at != std::string::npos; at = body.find(key, at + quoted.size()))
    body.replace(at, key.size(), quoted);
  return std::string(base_imports()) + "\n" + body + "\n";
}

IoCases parse_io_cases(const nlohmann::json& tc, std::string_view test_case_function) {
  IoCases out;
  if (tc.is_object()) {
    if (!tc.contains("inputs") || !tc.contains("outputs") || !tc["inputs"].is_array() || !tc["outputs"].is_array())
      throw Error("stdin/stdout test cases need \"inputs\" and \"outputs\" lists");
    for (const auto& x : tc["inputs"]) out.inputs.push_back(json_text(x));
    for (const auto& x : tc["outputs"]) out.outputs.push_back(json_text(x));
    if (tc.contains("fn_name") && tc["fn_name"].is_string()) out.fn_name = tc["fn_name"].get<std::string>();
  } else if (tc.is_array()) {
    for (const auto& c : tc) {
      if (!c.is_object()) throw Error(fmt::format("stdin/stdout test case {} is not an object", c.dump().substr(0, 200)));
      const char* in_key = c.contains("stdin") ? "stdin" : "input";
      const char* out_key = c.contains("expected_stdout") ? "expected_stdout" : "output";
      if (!c.contains(in_key) || !c.contains(out_key))
        throw Error(fmt::format("stdin/stdout test case {} needs stdin and expected_stdout", c.dump().substr(0, 200)));
      out.inputs.push_back(json_text(c[in_key]));
      out.outputs.push_back(json_text(c[out_key]));
    }
  } else {
    throw Error("stdin/stdout test cases must be an object or a list");
  }
  if (out.inputs.size() != out.outputs.size())
    throw Error(fmt::format("stdin/stdout test cases have {} inputs but {} outputs", out.inputs.size(), out.outputs.size()));
  if (!test_case_function.empty() && test_case_function != "None") out.fn_name = std::string(test_case_function);
  if (out.fn_name == "None") out.fn_name.clear();
  return out;
}

bool outputs_match(std::string_view got, std::string_view expected) {
  const auto a = split_lines(strip(got));
  const auto b = split_lines(strip(expected));
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string_view x = strip(a[i]), y = strip(b[i]);
    if (x == y) continue;
    const auto dx = decimal_line(x), dy = decimal_line(y);
    if (!dx || !dy || *dx != *dy) return false;
  }
  return true;
}

std::string_view call_based_runner() {
  static const std::string text = R"PY(import io, json, os, signal, sys


class _Limit(BaseException):
    pass


def _alarm(signum, frame):
    raise _Limit()


def _short(value):
    try:
        return repr(value)[:300]
    except BaseException:
        return "<unprintable>"


def _main():
    real_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    payload = json.loads(sys.stdin.read())
    tag = payload["tag"]
    limit = float(payload["timeout"])

    def report(**fields):
        real_out.write(tag + json.dumps(fields) + "\n")
        real_out.flush()

    sys.stdout = io.StringIO()  # what the solution prints is not a result
    with open("/sandbox/solution.py", encoding="utf-8") as f:
        source = f.read()
    try:
        compiled = compile(source, "solution.py", "exec")
    except (SyntaxError, ValueError) as e:
        return report(status="compile_error", error=_short(e))
    signal.signal(signal.SIGALRM, _alarm)
    module = {"__name__": "solution", "__builtins__": __builtins__}
    try:
        signal.setitimer(signal.ITIMER_REAL, limit)
        exec(compiled, module)
        target = module["Solution"]() if "class Solution" in source and "Solution" in module else None
        signal.setitimer(signal.ITIMER_REAL, 0)
    except _Limit:
        return report(status="timeout", error="loading the solution took too long")
    except BaseException as e:
        signal.setitimer(signal.ITIMER_REAL, 0)
        return report(status="runtime_error", error=_short(e))
    name = payload["fn_name"]
    method = getattr(target, name, None) if target is not None else module.get(name)
    if not callable(method):
        return report(status="runtime_error", error="the solution defines no function " + name)
    for i, (inp, out) in enumerate(zip(payload["inputs"], payload["outputs"])):
        try:
            args = [json.loads(line) for line in inp.rstrip("\n").split("\n")]
            expected = json.loads(out)
        except ValueError as e:
            return report(status="bad_case", index=i, error=_short(e))
        try:
            signal.setitimer(signal.ITIMER_REAL, limit)
            got = method(*args)
            signal.setitimer(signal.ITIMER_REAL, 0)
        except _Limit:
            return report(status="timeout", index=i, error="time limit exceeded")
        except BaseException as e:
            signal.setitimer(signal.ITIMER_REAL, 0)
            return report(status="runtime_error", index=i, error=_short(e))
        if isinstance(got, tuple):
            got = list(got)
        try:
            same = got == expected
        except BaseException as e:
            same = False
        if not same:
            return report(status="wrong_answer", index=i, got=_short(got), expected=_short(expected))
    report(status="ok", passed=len(payload["inputs"]))


_main()
)PY";
  return text;
}

}  // namespace roll::reward
