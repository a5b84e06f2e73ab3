#include "roll/jinja/builtins.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <unordered_map>

#include "roll/core/error.h"
#include "roll/core/html_escape.h"
#include "roll/jinja/json.h"
#include "roll/jinja/ops.h"
#include "roll/jinja/python.h"

namespace roll::jinja {

namespace {

using Filter = Value (*)(const Value&, const CallArgs&);
using Test = bool (*)(const Value&, const CallArgs&);

// ---- argument helpers ----

const Value* arg(const CallArgs& a, std::size_t index, std::string_view name) {
  const Value* v = a.get(index, name);
  return v && !v->is_undefined() ? v : nullptr;
}

std::string str_arg(const CallArgs& a, std::size_t index, std::string_view name, const std::string& dflt) {
  const Value* v = arg(a, index, name);
  return v ? to_str(*v) : dflt;
}

bool bool_arg(const CallArgs& a, std::size_t index, std::string_view name, bool dflt) {
  const Value* v = arg(a, index, name);
  return v ? v->truthy() : dflt;
}

std::int64_t int_arg(const CallArgs& a, std::size_t index, std::string_view name, std::int64_t dflt) {
  const Value* v = arg(a, index, name);
  if (!v || v->is_none()) return dflt;
  if (!v->is_int() && !v->is_bool()) throw roll::Error("expected an integer argument '" + std::string(name) + "'");
  return v->as_int();
}

// Arguments after the first `skip` positional ones (for select/map style filters).
CallArgs tail(const CallArgs& a, std::size_t skip) {
  CallArgs rest;
  for (std::size_t i = skip; i < a.positional.size(); ++i) rest.positional.push_back(a.positional[i]);
  rest.keyword = a.keyword;
  return rest;
}

Value strings_to_list(const std::vector<std::string>& parts) {
  ValueList out;
  out.reserve(parts.size());
  for (const auto& p : parts) out.emplace_back(p);
  return Value::list(std::move(out));
}

std::int64_t length_of(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return 0;
    case Value::Kind::String: return static_cast<std::int64_t>(py::length(v.as_string()));
    case Value::Kind::List: return static_cast<std::int64_t>(v.as_list().size());
    case Value::Kind::Dict: return static_cast<std::int64_t>(v.as_dict().size());
    default: throw roll::Error("object of type '" + v.type_name() + "' has no len()");
  }
}

// Python's str.splitlines() boundaries.
std::vector<std::string> splitlines(const std::string& s) {
  std::vector<std::string> lines;
  const std::u32string cps = py::decode(s);
  std::u32string cur;
  for (std::size_t i = 0; i < cps.size(); ++i) {
    const char32_t c = cps[i];
    const bool brk = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
                     c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!brk) {
      cur.push_back(c);
      continue;
    }
    if (c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
    lines.push_back(py::encode(cur));
    cur.clear();
  }
  if (!cur.empty()) lines.push_back(py::encode(cur));
  return lines;
}

std::string trim_str(std::string_view s) { return py::strip(s, nullptr); }

// Python int(str, base): surrounding whitespace, a sign, digits with single underscores.
std::optional<std::int64_t> parse_int(const std::string& text, int base) {
  std::string s = trim_str(text);
  bool neg = false;
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  if (base == 16 && s.compare(i, 2, "0x") == 0) i += 2;
  std::string digits;
  for (; i < s.size(); ++i) {
    if (s[i] == '_' && !digits.empty() && i + 1 < s.size() && s[i + 1] != '_') continue;
    digits += s[i];
  }
  if (digits.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(digits.c_str(), &end, base);
  if (errno || *end != '\0') return std::nullopt;
  return neg ? -v : v;
}

std::optional<double> parse_float(const std::string& text) {
  const std::string s = trim_str(text);
  if (s.empty() || s.find("0x") != std::string::npos || s.find("0X") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  return d;
}

// ---- filters ----

// Sort key of Jinja's sort/unique/dictsort: strings compare case-insensitively unless asked.
Value sort_key(const Value& v, bool case_sensitive) {
  return !case_sensitive && v.is_string() ? Value(py::lower(v.as_string())) : v;
}


// A str result that stays Markup when its input was (markupsafe wraps these str methods).
Value like(const Value& input, std::string s) { return input.is_safe() ? Value::safe_string(std::move(s)) : Value(std::move(s)); }

Value f_trim(const Value& v, const CallArgs& a) {
  const Value* chars = arg(a, 0, "chars");
  if (chars && !chars->is_none()) {
    const std::string c = to_str(*chars);
    return like(v, py::strip(to_str(v), &c));
  }
  return like(v, trim_str(to_str(v)));
}

Value f_length(const Value& v, const CallArgs&) { return Value(length_of(v)); }

// HF's tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
Value f_tojson(const Value& v, const CallArgs& a) {
  DumpOptions opt;
  opt.ensure_ascii = bool_arg(a, 0, "ensure_ascii", false);
  if (const Value* indent = arg(a, 1, "indent"); indent && !indent->is_none()) {
    if (indent->is_string())
      opt.indent = indent->as_string();
    else
      opt.indent = std::string(static_cast<std::size_t>(std::max<std::int64_t>(0, indent->as_int())), ' ');
  }
  if (const Value* sep = arg(a, 2, "separators"); sep && !sep->is_none()) {
    if (!sep->is_list() || sep->as_list().size() != 2) throw roll::Error("tojson separators must be a pair of strings");
    opt.item_separator = to_str(sep->as_list()[0]);
    opt.key_separator = to_str(sep->as_list()[1]);
  }
  opt.sort_keys = bool_arg(a, 3, "sort_keys", false);
  return Value(dumps(v, opt));
}

Value f_string(const Value& v, const CallArgs&) { return v.is_safe() ? v : Value(to_str(v)); }
Value f_lower(const Value& v, const CallArgs&) { return Value(py::lower(to_str(v))); }
Value f_upper(const Value& v, const CallArgs&) { return Value(py::upper(to_str(v))); }
Value f_capitalize(const Value& v, const CallArgs&) { return Value(py::capitalize(to_str(v))); }
Value f_title(const Value& v, const CallArgs&) { return Value(py::title(to_str(v))); }

Value f_replace(const Value& v, const CallArgs& a) {
  return Value(py::replace(to_str(v), str_arg(a, 0, "old", ""), str_arg(a, 1, "new", ""), int_arg(a, 2, "count", -1)));
}

Value f_items(const Value& v, const CallArgs&) {
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict()) throw roll::Error("Can only get item pairs from a mapping.");
  ValueList out;
  for (const auto& [k, val] : v.as_dict().items()) out.push_back(Value::tuple({Value(k), val}));
  return Value::list(std::move(out));
}

Value f_first(const Value& v, const CallArgs&) {
  ValueList items = iterate(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value f_last(const Value& v, const CallArgs&) {
  ValueList items = iterate(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value f_default(const Value& v, const CallArgs& a) {
  const bool boolean = bool_arg(a, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !v.truthy())) {
    const Value* d = a.get(0, "default_value");
    return d ? *d : Value("");
  }
  return v;
}

Value f_join(const Value& v, const CallArgs& a) {
  const std::string sep = str_arg(a, 0, "d", "");
  const Value* attribute = arg(a, 1, "attribute");
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += to_str(attribute ? get_path(item, to_str(*attribute)) : item);
  }
  return Value(std::move(out));
}

Value f_int(const Value& v, const CallArgs& a) {
  const Value* dflt = arg(a, 0, "default");
  const auto base = static_cast<int>(int_arg(a, 1, "base", 10));
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) return Value(static_cast<std::int64_t>(std::trunc(v.as_double())));
  if (v.is_string()) {
    if (auto i = parse_int(v.as_string(), base)) return Value(*i);
    if (auto d = parse_float(v.as_string()); d && std::isfinite(*d)) return Value(static_cast<std::int64_t>(std::trunc(*d)));
  }
  return dflt ? *dflt : Value(std::int64_t{0});
}

Value f_float(const Value& v, const CallArgs& a) {
  const Value* dflt = arg(a, 0, "default");
  if (v.is_number()) return Value(v.as_double());
  if (v.is_string())
    if (auto d = parse_float(v.as_string())) return Value(*d);
  return dflt ? *dflt : Value(0.0);
}

Value f_list(const Value& v, const CallArgs&) { return Value::list(iterate(v)); }
Value f_safe(const Value& v, const CallArgs&) { return v.is_safe() ? v : Value::safe_string(to_str(v)); }
Value f_escape(const Value& v, const CallArgs&) {
  return v.is_safe() ? v : Value::safe_string(roll::html_escape(to_str(v)));
}

Value min_max(const Value& v, const CallArgs& a, bool want_max) {
  const bool cs = bool_arg(a, 0, "case_sensitive", false);
  const Value* attr = arg(a, 1, "attribute");
  const ValueList items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value& x) { return sort_key(attr ? get_path(x, to_str(*attr)) : x, cs); };
  std::size_t best = 0;
  for (std::size_t i = 1; i < items.size(); ++i) {
    const bool better = want_max ? less(key(items[best]), key(items[i])) : less(key(items[i]), key(items[best]));
    if (better) best = i;
  }
  return items[best];
}
Value f_min(const Value& v, const CallArgs& a) { return min_max(v, a, false); }
Value f_max(const Value& v, const CallArgs& a) { return min_max(v, a, true); }

Value select_impl(const Value& v, const CallArgs& a, bool with_attr, bool keep) {
  std::size_t next = 0;
  std::string attr;
  if (with_attr) {
    const Value* at = a.get(0, "attribute");
    if (!at) throw roll::Error("selectattr/rejectattr need an attribute name");
    attr = to_str(*at);
    next = 1;
  }
  const Value* test = next < a.positional.size() ? &a.positional[next] : nullptr;
  const CallArgs test_args = tail(a, next + 1);
  ValueList out;
  if (!v.truthy()) return Value::list({});  // Jinja skips a falsy input (None included)
  for (const Value& item : iterate(v)) {
    const Value subject = with_attr ? get_path(item, attr) : item;
    const bool ok = test ? apply_test(to_str(*test), subject, test_args) : subject.truthy();
    if (ok == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value f_select(const Value& v, const CallArgs& a) { return select_impl(v, a, false, true); }
Value f_reject(const Value& v, const CallArgs& a) { return select_impl(v, a, false, false); }
Value f_selectattr(const Value& v, const CallArgs& a) { return select_impl(v, a, true, true); }
Value f_rejectattr(const Value& v, const CallArgs& a) { return select_impl(v, a, true, false); }

Value f_map(const Value& v, const CallArgs& a) {
  ValueList out;
  if (!v.truthy()) return Value::list({});  // Jinja skips a falsy input (None included)
  if (const Value* attr = a.get(99, "attribute")) {
    const Value* dflt = a.get(99, "default");
    for (const Value& item : iterate(v)) {
      Value x = get_path(item, to_str(*attr));
      out.push_back(x.is_undefined() && dflt ? *dflt : x);
    }
    return Value::list(std::move(out));
  }
  if (a.positional.empty()) throw roll::Error("map needs a filter name or attribute=");
  const std::string filter = to_str(a.positional[0]);
  const CallArgs rest = tail(a, 1);
  for (const Value& item : iterate(v)) out.push_back(apply_filter(filter, item, rest));
  return Value::list(std::move(out));
}

Value f_reverse(const Value& v, const CallArgs&) {
  if (v.is_string()) {
    std::u32string cps = py::decode(v.as_string());
    std::reverse(cps.begin(), cps.end());
    return Value(py::encode(cps));
  }
  ValueList items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value f_sort(const Value& v, const CallArgs& a) {
  const bool reverse = bool_arg(a, 0, "reverse", false);
  const bool cs = bool_arg(a, 1, "case_sensitive", false);
  const Value* attr = arg(a, 2, "attribute");
  ValueList items = iterate(v);
  auto key = [&](const Value& x) { return sort_key(attr ? get_path(x, to_str(*attr)) : x, cs); };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return reverse ? less(key(y), key(x)) : less(key(x), key(y));
  });
  return Value::list(std::move(items));
}

Value f_unique(const Value& v, const CallArgs& a) {
  const bool cs = bool_arg(a, 0, "case_sensitive", false);
  const Value* attr = arg(a, 1, "attribute");
  ValueList out, seen;
  for (const Value& item : iterate(v)) {
    Value k = sort_key(attr ? get_path(item, to_str(*attr)) : item, cs);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, k); })) continue;
    seen.push_back(std::move(k));
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value f_dictsort(const Value& v, const CallArgs& a) {
  if (!v.is_dict()) throw roll::Error("You can only sort by either \"key\" or \"value\" of a mapping");
  const bool cs = bool_arg(a, 0, "case_sensitive", false);
  const std::string by = str_arg(a, 1, "by", "key");
  const bool reverse = bool_arg(a, 2, "reverse", false);
  if (by != "key" && by != "value") throw roll::Error("You can only sort by either \"key\" or \"value\"");
  ValueList pairs = f_items(v, {}).as_list();
  const std::size_t pos = by == "key" ? 0 : 1;
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    const Value kx = sort_key(x.as_list()[pos], cs), ky = sort_key(y.as_list()[pos], cs);
    return reverse ? less(ky, kx) : less(kx, ky);
  });
  return Value::list(std::move(pairs));
}

Value f_indent(const Value& v, const CallArgs& a) {
  std::string indention = "    ";
  if (const Value* w = arg(a, 0, "width"))
    indention = w->is_string() ? w->as_string() : std::string(static_cast<std::size_t>(std::max<std::int64_t>(0, w->as_int())), ' ');
  const bool first = bool_arg(a, 1, "first", false);
  const bool blank = bool_arg(a, 2, "blank", false);
  std::vector<std::string> lines = splitlines(to_str(v) + "\n");  // Jinja appends "\n" first too
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\n";
    out += (i > 0 && (blank || !lines[i].empty()) ? indention : "") + lines[i];
  }
  if (first) out = indention + out;
  return Value(std::move(out));
}

Value f_abs(const Value& v, const CallArgs&) {
  if (v.is_float()) return Value(std::fabs(v.as_double()));
  if (v.is_int() || v.is_bool()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  throw roll::Error("bad operand type for abs(): '" + v.type_name() + "'");
}

const std::unordered_map<std::string, Filter>& filters() {
  static const std::unordered_map<std::string, Filter> table = {
      {"trim", f_trim},          {"length", f_length},       {"count", f_length},     {"tojson", f_tojson},
      {"string", f_string},      {"lower", f_lower},         {"upper", f_upper},      {"capitalize", f_capitalize},
      {"title", f_title},        {"replace", f_replace},     {"items", f_items},      {"first", f_first},
      {"last", f_last},          {"default", f_default},     {"d", f_default},        {"join", f_join},
      {"int", f_int},            {"float", f_float},         {"list", f_list},        {"safe", f_safe},
      {"select", f_select},      {"reject", f_reject},       {"selectattr", f_selectattr},
      {"rejectattr", f_rejectattr}, {"map", f_map},          {"reverse", f_reverse},  {"sort", f_sort},
      {"unique", f_unique},      {"dictsort", f_dictsort},   {"indent", f_indent},    {"abs", f_abs},
      {"escape", f_escape},      {"e", f_escape},            {"min", f_min},          {"max", f_max},
  };
  return table;
}

// ---- tests ----

const Value& test_arg(const CallArgs& a, const char* test) {
  if (a.positional.empty()) throw roll::Error(std::string("test '") + test + "' needs an argument");
  return a.positional[0];
}

const std::unordered_map<std::string, Test>& tests() {
  static const std::unordered_map<std::string, Test> table = {
      {"defined", [](const Value& v, const CallArgs&) { return !v.is_undefined(); }},
      {"undefined", [](const Value& v, const CallArgs&) { return v.is_undefined(); }},
      {"none", [](const Value& v, const CallArgs&) { return v.is_none(); }},
      {"boolean", [](const Value& v, const CallArgs&) { return v.is_bool(); }},
      {"true", [](const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }},
      {"false", [](const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }},
      {"integer", [](const Value& v, const CallArgs&) { return v.is_int(); }},
      {"float", [](const Value& v, const CallArgs&) { return v.is_float(); }},
      {"number", [](const Value& v, const CallArgs&) { return v.is_number(); }},
      {"string", [](const Value& v, const CallArgs&) { return v.is_string(); }},
      {"mapping", [](const Value& v, const CallArgs&) { return v.is_dict(); }},
      // Jinja's Undefined defines __iter__, __len__ and __call__, so these tests accept it.
      {"iterable", [](const Value& v, const CallArgs&) { return v.is_undefined() || v.is_list() || v.is_dict() || v.is_string(); }},
      {"sequence", [](const Value& v, const CallArgs&) { return v.is_undefined() || v.is_list() || v.is_dict() || v.is_string(); }},
      {"callable", [](const Value& v, const CallArgs&) { return v.is_function() || v.is_undefined(); }},
      {"sameas", [](const Value& v, const CallArgs& a) { return v.same_object(test_arg(a, "sameas")); }},
      {"escaped", [](const Value&, const CallArgs&) { return false; }},
      {"in", [](const Value& v, const CallArgs& a) { return contains(test_arg(a, "in"), v); }},
      {"eq", [](const Value& v, const CallArgs& a) { return equals(v, test_arg(a, "eq")); }},
      {"equalto", [](const Value& v, const CallArgs& a) { return equals(v, test_arg(a, "equalto")); }},
      {"==", [](const Value& v, const CallArgs& a) { return equals(v, test_arg(a, "==")); }},
      {"ne", [](const Value& v, const CallArgs& a) { return !equals(v, test_arg(a, "ne")); }},
      {"!=", [](const Value& v, const CallArgs& a) { return !equals(v, test_arg(a, "!=")); }},
      {"lt", [](const Value& v, const CallArgs& a) { return less(v, test_arg(a, "lt")); }},
      {"lessthan", [](const Value& v, const CallArgs& a) { return less(v, test_arg(a, "lessthan")); }},
      {"<", [](const Value& v, const CallArgs& a) { return less(v, test_arg(a, "<")); }},
      {"le", [](const Value& v, const CallArgs& a) { return !less(test_arg(a, "le"), v); }},
      {"<=", [](const Value& v, const CallArgs& a) { return !less(test_arg(a, "<="), v); }},
      {"gt", [](const Value& v, const CallArgs& a) { return less(test_arg(a, "gt"), v); }},
      {"greaterthan", [](const Value& v, const CallArgs& a) { return less(test_arg(a, "greaterthan"), v); }},
      {">", [](const Value& v, const CallArgs& a) { return less(test_arg(a, ">"), v); }},
      {"ge", [](const Value& v, const CallArgs& a) { return !less(v, test_arg(a, "ge")); }},
      {">=", [](const Value& v, const CallArgs& a) { return !less(v, test_arg(a, ">=")); }},
      {"odd", [](const Value& v, const CallArgs&) { return py::floor_mod(v.as_int(), 2) == 1; }},
      {"even", [](const Value& v, const CallArgs&) { return py::floor_mod(v.as_int(), 2) == 0; }},
      {"divisibleby", [](const Value& v, const CallArgs& a) { return py::floor_mod(v.as_int(), test_arg(a, "divisibleby").as_int()) == 0; }},
      {"lower", [](const Value& v, const CallArgs&) { return py::all_cased_are(to_str(v), true); }},
      {"upper", [](const Value& v, const CallArgs&) { return py::all_cased_are(to_str(v), false); }},
      {"filter", [](const Value& v, const CallArgs&) { return v.is_string() && has_filter(v.as_string()); }},
      {"test", [](const Value& v, const CallArgs&) { return v.is_string() && has_test(v.as_string()); }},
  };
  return table;
}

// ---- methods ----

Value bind(const Value& self, const std::string& name, Value (*fn)(const Value&, const CallArgs&)) {
  return Value::function(name, [self, fn](const CallArgs& a) { return fn(self, a); });
}

const std::string* opt_str(const CallArgs& a, std::size_t i, std::string_view name, std::string& storage) {
  const Value* v = arg(a, i, name);
  if (!v || v->is_none()) return nullptr;
  storage = to_str(*v);
  return &storage;
}

bool affix_match(const Value& self, const CallArgs& a, bool prefix) {
  if (a.positional.size() > 1) throw roll::Error("startswith/endswith with start/end positions is not supported");
  const std::string& s = self.as_string();
  auto one = [&](const Value& p) {
    if (!p.is_string()) throw roll::Error("startswith/endswith first arg must be str or a tuple of str");
    const std::string& x = p.as_string();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  const Value* p = a.get(0, prefix ? "prefix" : "suffix");
  if (!p) throw roll::Error("startswith/endswith need an argument");
  if (p->is_list()) return std::any_of(p->as_list().begin(), p->as_list().end(), one);
  return one(*p);
}

Value str_strip_impl(const Value& self, const CallArgs& a, bool left, bool right) {
  std::string chars;
  return like(self, py::strip(self.as_string(), opt_str(a, 0, "chars", chars), left, right));
}

// Python's str.format for what templates use: {} / {0} / {name} fields and {{ }} escapes; a
// field with a conversion or format spec is an error rather than a guess.
Value str_format(const Value& self, const CallArgs& a) {
  const std::string& f = self.as_string();
  std::string out;
  std::size_t auto_index = 0;
  for (std::size_t i = 0; i < f.size(); ++i) {
    const char c = f[i];
    if (c == '}') {
      if (i + 1 < f.size() && f[i + 1] == '}') ++i;
      else throw roll::Error("Single '}' encountered in format string");
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const std::size_t close = f.find('}', i);
    if (close == std::string::npos) throw roll::Error("Single '{' encountered in format string");
    const std::string field = f.substr(i + 1, close - i - 1);
    if (field.find_first_of("!:[.") != std::string::npos)
      throw roll::Error("str.format field '{" + field + "}' is not supported by this renderer");
    const Value* v = nullptr;
    if (field.empty()) {
      v = auto_index < a.positional.size() ? &a.positional[auto_index] : nullptr;
      ++auto_index;
    } else if (field.find_first_not_of("0123456789") == std::string::npos) {
      const auto idx = static_cast<std::size_t>(std::stoul(field));
      v = idx < a.positional.size() ? &a.positional[idx] : nullptr;
    } else {
      for (const auto& [k, val] : a.keyword)
        if (k == field) v = &val;
    }
    if (!v) throw roll::Error("str.format: no argument for field '{" + field + "}'");
    out += to_str(*v);
    i = close;
  }
  return Value(std::move(out));
}

Value dict_get(const Value& self, const CallArgs& a) {
  const Value* key = a.get(0, "key");
  if (!key) throw roll::Error("dict.get needs a key");
  if (key->is_string())
    if (const Value* v = self.as_dict().find(key->as_string())) return *v;
  const Value* dflt = a.get(1, "default");
  return dflt ? *dflt : Value::none();
}

using Method = Value (*)(const Value&, const CallArgs&);

const std::unordered_map<std::string, Method>& string_methods() {
  static const std::unordered_map<std::string, Method> table = {
      {"startswith", [](const Value& s, const CallArgs& a) { return Value(affix_match(s, a, true)); }},
      {"endswith", [](const Value& s, const CallArgs& a) { return Value(affix_match(s, a, false)); }},
      {"strip", [](const Value& s, const CallArgs& a) { return str_strip_impl(s, a, true, true); }},
      {"lstrip", [](const Value& s, const CallArgs& a) { return str_strip_impl(s, a, true, false); }},
      {"rstrip", [](const Value& s, const CallArgs& a) { return str_strip_impl(s, a, false, true); }},
      {"split",
       [](const Value& s, const CallArgs& a) {
         std::string sep;
         return strings_to_list(py::split(s.as_string(), opt_str(a, 0, "sep", sep), int_arg(a, 1, "maxsplit", -1)));
       }},
      {"rsplit",
       [](const Value& s, const CallArgs& a) {
         std::string sep;
         return strings_to_list(py::rsplit(s.as_string(), opt_str(a, 0, "sep", sep), int_arg(a, 1, "maxsplit", -1)));
       }},
      {"splitlines", [](const Value& s, const CallArgs&) { return strings_to_list(splitlines(s.as_string())); }},
      {"upper", [](const Value& s, const CallArgs&) { return like(s, py::upper(s.as_string())); }},
      {"lower", [](const Value& s, const CallArgs&) { return like(s, py::lower(s.as_string())); }},
      {"title", [](const Value& s, const CallArgs&) { return like(s, py::title(s.as_string())); }},
      {"capitalize", [](const Value& s, const CallArgs&) { return like(s, py::capitalize(s.as_string())); }},
      {"format", str_format},
      {"replace",
       [](const Value& s, const CallArgs& a) {
         return Value(py::replace(s.as_string(), str_arg(a, 0, "old", ""), str_arg(a, 1, "new", ""), int_arg(a, 2, "count", -1)));
       }},
      {"find", [](const Value& s, const CallArgs& a) { return Value(py::find(s.as_string(), str_arg(a, 0, "sub", ""))); }},
      {"count", [](const Value& s, const CallArgs& a) { return Value(py::count(s.as_string(), str_arg(a, 0, "sub", ""))); }},
      {"join",
       [](const Value& s, const CallArgs& a) {
         const Value* items = a.get(0, "iterable");
         if (!items) throw roll::Error("str.join needs an iterable");
         std::string out;
         bool first = true;
         for (const Value& item : iterate(*items)) {
           if (!item.is_string()) throw roll::Error("sequence item: expected str instance, " + item.type_name() + " found");
           if (!first) out += s.as_string();
           first = false;
           out += item.as_string();
         }
         return Value(std::move(out));
       }},
      {"isdigit",
       [](const Value& s, const CallArgs&) {
         const std::string& x = s.as_string();
         return Value(!x.empty() && std::all_of(x.begin(), x.end(), [](char c) { return c >= '0' && c <= '9'; }));
       }},
      {"isspace",
       [](const Value& s, const CallArgs&) {
         const std::u32string x = py::decode(s.as_string());
         return Value(!x.empty() && std::all_of(x.begin(), x.end(), py::is_space));
       }},
      {"islower", [](const Value& s, const CallArgs&) { return Value(py::all_cased_are(s.as_string(), true)); }},
      {"isupper", [](const Value& s, const CallArgs&) { return Value(py::all_cased_are(s.as_string(), false)); }},
  };
  return table;
}

const std::unordered_map<std::string, Method>& dict_methods() {
  static const std::unordered_map<std::string, Method> table = {
      {"items", [](const Value& d, const CallArgs&) { return f_items(d, {}); }},
      {"keys", [](const Value& d, const CallArgs&) { return Value::list(iterate(d)); }},
      {"values",
       [](const Value& d, const CallArgs&) {
         ValueList out;
         for (const auto& item : d.as_dict().items()) out.push_back(item.second);
         return Value::list(std::move(out));
       }},
      {"get", dict_get},
  };
  return table;
}

// ---- globals ----

ValueDict make_globals() {
  ValueDict g;
  g.set("raise_exception", Value::function("raise_exception", [](const CallArgs& a) -> Value {
          throw roll::Error(a.positional.empty() ? std::string("raise_exception() called") : to_str(a.positional[0]));
        }));
  g.set("strftime_now", Value::function("strftime_now", [](const CallArgs& a) {
          const std::string fmt = str_arg(a, 0, "format", "");
          const std::time_t now = std::time(nullptr);
          std::tm tm{};
          localtime_r(&now, &tm);
          char buf[512];
          const std::size_t n = fmt.empty() ? 0 : std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
          return Value(std::string(buf, n));
        }));
  auto to_dict = [](const CallArgs& a) {
    ValueDict d;
    for (const Value& p : a.positional) {
      if (!p.is_dict()) throw roll::Error("expected a mapping argument");
      for (const auto& [k, v] : p.as_dict().items()) d.set(k, v);
    }
    for (const auto& [k, v] : a.keyword) d.set(k, v);
    return d;
  };
  g.set("namespace", Value::function("namespace", [to_dict](const CallArgs& a) { return Value::make_namespace(to_dict(a)); }));
  g.set("dict", Value::function("dict", [to_dict](const CallArgs& a) { return Value::dict(to_dict(a)); }));
  g.set("range", Value::function("range", [](const CallArgs& a) {
          if (a.positional.empty()) throw roll::Error("range expected at least 1 argument, got 0");
          std::int64_t start = 0, stop, step = 1;
          if (a.positional.size() == 1) {
            stop = a.positional[0].as_int();
          } else {
            start = a.positional[0].as_int();
            stop = a.positional[1].as_int();
            if (a.positional.size() > 2) step = a.positional[2].as_int();
          }
          if (step == 0) throw roll::Error("range() arg 3 must not be zero");
          ValueList out;
          for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
            if (out.size() >= 100000) throw roll::Error("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
            out.emplace_back(i);
          }
          return Value::list(std::move(out));
        }));
  return g;
}

}  // namespace

Value apply_filter(const std::string& name, const Value& value, const CallArgs& args) {
  const auto& table = filters();
  const auto it = table.find(name);
  if (it == table.end()) throw roll::Error("No filter named '" + name + "'.");
  return it->second(value, args);
}

bool apply_test(const std::string& name, const Value& value, const CallArgs& args) {
  const auto& table = tests();
  const auto it = table.find(name);
  if (it == table.end()) throw roll::Error("No test named '" + name + "'.");
  return it->second(value, args);
}

bool has_filter(const std::string& name) { return filters().count(name) > 0; }
bool has_test(const std::string& name) { return tests().count(name) > 0; }

std::optional<Value> method(const Value& object, const std::string& name) {
  const auto* table = object.is_string() ? &string_methods() : object.is_dict() ? &dict_methods() : nullptr;
  if (!table) return std::nullopt;
  const auto it = table->find(name);
  if (it == table->end()) return std::nullopt;
  return bind(object, name, it->second);
}

const ValueDict& globals() {
  static const ValueDict g = make_globals();
  return g;
}

}  // namespace roll::jinja
