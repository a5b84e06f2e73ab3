#include "roll/jinja/ops.h"

#include <cmath>

#include "roll/core/error.h"
#include "roll/core/html_escape.h"
#include "roll/jinja/builtins.h"
#include "roll/jinja/python.h"

namespace roll::jinja {

namespace {

// Jinja's object_type_repr: "dict object", "None", ...
std::string object_repr(const Value& v) { return v.is_none() ? "None" : v.type_name() + " object"; }

Value no_attribute(const Value& object, const std::string& name) {
  return Value::undefined("'" + object_repr(object) + "' has no attribute '" + name + "'");
}

[[noreturn]] void fail_undefined(const Value& v) {
  throw roll::Error(v.undefined_hint().empty() ? "value is undefined" : v.undefined_hint());
}

[[noreturn]] void unsupported(const char* op, const Value& a, const Value& b) {
  throw roll::Error(std::string("unsupported operand type(s) for ") + op + ": '" + a.type_name() + "' and '" +
                    b.type_name() + "'");
}

}  // namespace

Value get_attr(const Value& object, const std::string& name) {
  switch (object.kind()) {
    case Value::Kind::Undefined: fail_undefined(object);
    case Value::Kind::Namespace: {
      const Value* v = object.namespace_attrs().find(name);
      return v ? *v : no_attribute(object, name);
    }
    case Value::Kind::Dict: {
      if (auto m = method(object, name)) return *m;
      const Value* v = object.as_dict().find(name);
      return v ? *v : no_attribute(object, name);
    }
    case Value::Kind::String: {
      if (auto m = method(object, name)) return *m;
      return no_attribute(object, name);
    }
    default: return no_attribute(object, name);
  }
}

Value get_item(const Value& object, const Value& key) {
  switch (object.kind()) {
    case Value::Kind::Undefined: fail_undefined(object);
    case Value::Kind::List:
    case Value::Kind::String: {
      if (key.is_int() || key.is_bool()) {
        const bool is_list = object.is_list();
        const std::u32string cps = is_list ? std::u32string() : py::decode(object.as_string());
        const auto n = static_cast<std::int64_t>(is_list ? object.as_list().size() : cps.size());
        std::int64_t i = key.as_int();
        if (i < 0) i += n;
        if (i < 0 || i >= n)
          return Value::undefined(object.type_name() + " object has no element " + std::to_string(key.as_int()));
        if (is_list) return object.as_list()[static_cast<std::size_t>(i)];
        std::string out;
        py::append_utf8(out, cps[static_cast<std::size_t>(i)]);
        return Value(std::move(out));
      }
      if (key.is_string()) return get_attr(object, key.as_string());
      return Value::undefined(object.type_name() + " object has no element " + to_repr(key));
    }
    case Value::Kind::Dict: {
      if (key.is_string()) {
        if (const Value* v = object.as_dict().find(key.as_string())) return *v;
        if (auto m = method(object, key.as_string())) return *m;
        return no_attribute(object, key.as_string());
      }
      return Value::undefined("dict object has no element " + to_repr(key));
    }
    default:
      if (key.is_string()) return get_attr(object, key.as_string());
      return Value::undefined(object_repr(object) + " has no element " + to_repr(key));
  }
}

Value slice(const Value& object, std::optional<std::int64_t> start, std::optional<std::int64_t> stop,
            std::optional<std::int64_t> step) {
  if (object.is_undefined()) fail_undefined(object);
  if (object.is_list()) {
    const ValueList& items = object.as_list();
    ValueList out;
    for (std::int64_t i : py::slice_indices(static_cast<std::int64_t>(items.size()), start, stop, step))
      out.push_back(items[static_cast<std::size_t>(i)]);
    return Value::list(std::move(out));
  }
  if (object.is_string()) {
    const std::u32string cps = py::decode(object.as_string());
    std::u32string out;
    for (std::int64_t i : py::slice_indices(static_cast<std::int64_t>(cps.size()), start, stop, step))
      out.push_back(cps[static_cast<std::size_t>(i)]);
    return Value(py::encode(out));
  }
  throw roll::Error("'" + object.type_name() + "' object is not subscriptable");
}

Value binary_op(BinaryExpr::Op op, const Value& a, const Value& b) {
  using Op = BinaryExpr::Op;
  if (op == Op::Concat) return Value(to_str(a) + to_str(b));
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  const bool nums = a.is_number() && b.is_number();
  const bool ints = nums && !a.is_float() && !b.is_float();
  switch (op) {
    case Op::Add:
      if (ints) return Value(a.as_int() + b.as_int());
      if (nums) return Value(a.as_double() + b.as_double());
      if (a.is_string() && b.is_string()) {
        if (!a.is_safe() && !b.is_safe()) return Value(a.as_string() + b.as_string());
        // Markup + str escapes the plain side (markupsafe's __add__/__radd__).
        auto side = [](const Value& v) { return v.is_safe() ? v.as_string() : roll::html_escape(v.as_string()); };
        return Value::safe_string(side(a) + side(b));
      }
      if (a.is_list() && b.is_list()) {
        ValueList out = a.as_list();
        out.insert(out.end(), b.as_list().begin(), b.as_list().end());
        return Value::list(std::move(out));
      }
      if (a.is_string()) throw roll::Error("can only concatenate str (not \"" + b.type_name() + "\") to str");
      unsupported("+", a, b);
    case Op::Sub:
      if (ints) return Value(a.as_int() - b.as_int());
      if (nums) return Value(a.as_double() - b.as_double());
      unsupported("-", a, b);
    case Op::Mul: {
      if (ints) return Value(a.as_int() * b.as_int());
      if (nums) return Value(a.as_double() * b.as_double());
      const Value* seq = a.is_string() || a.is_list() ? &a : &b;
      const Value* times = seq == &a ? &b : &a;
      if ((seq->is_string() || seq->is_list()) && (times->is_int() || times->is_bool())) {
        const std::int64_t n = times->as_int();
        if (seq->is_string()) {
          std::string out;
          for (std::int64_t i = 0; i < n; ++i) out += seq->as_string();
          return Value(std::move(out));
        }
        ValueList out;
        for (std::int64_t i = 0; i < n; ++i) out.insert(out.end(), seq->as_list().begin(), seq->as_list().end());
        return Value::list(std::move(out));
      }
      unsupported("*", a, b);
    }
    case Op::Div:
      if (!nums) unsupported("/", a, b);
      if (b.as_double() == 0) throw roll::Error("division by zero");
      return Value(a.as_double() / b.as_double());
    case Op::FloorDiv:
      if (ints) return Value(py::floor_div(a.as_int(), b.as_int()));
      if (!nums) unsupported("//", a, b);
      if (b.as_double() == 0) throw roll::Error("float floor division by zero");
      return Value(std::floor(a.as_double() / b.as_double()));
    case Op::Mod:
      if (ints) return Value(py::floor_mod(a.as_int(), b.as_int()));
      if (nums) return Value(py::floor_mod(a.as_double(), b.as_double()));
      if (a.is_string()) throw roll::Error("printf-style string formatting ('%') is not supported by this renderer");
      unsupported("%", a, b);
    case Op::Pow:
      if (ints && b.as_int() >= 0) {
        std::int64_t r = 1;
        for (std::int64_t i = 0; i < b.as_int(); ++i) r *= a.as_int();
        return Value(r);
      }
      if (nums) return Value(std::pow(a.as_double(), b.as_double()));
      unsupported("** or pow()", a, b);
    default: break;
  }
  throw roll::Error("unsupported binary operator");
}

Value negate(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_float()) return Value(-v.as_double());
  if (v.is_int() || v.is_bool()) return Value(-v.as_int());
  throw roll::Error("bad operand type for unary -: '" + v.type_name() + "'");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::Undefined: return false;  // Undefined iterates as empty
    case Value::Kind::String:
      if (!item.is_string())
        throw roll::Error("'in <string>' requires string as left operand, not " + item.type_name());
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::List:
      for (const Value& v : container.as_list())
        if (equals(v, item)) return true;
      return false;
    case Value::Kind::Dict: return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
    default: throw roll::Error("argument of type '" + container.type_name() + "' is not iterable");
  }
}

ValueList iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::List: return v.as_list();
    case Value::Kind::Dict: {
      ValueList keys;
      for (const auto& item : v.as_dict().items()) keys.emplace_back(item.first);
      return keys;
    }
    case Value::Kind::String: {
      ValueList chars;
      for (char32_t c : py::decode(v.as_string())) {
        std::string s;
        py::append_utf8(s, c);
        chars.emplace_back(std::move(s));
      }
      return chars;
    }
    default: throw roll::Error("'" + v.type_name() + "' object is not iterable");
  }
}

Value get_path(const Value& object, const std::string& path) {
  Value cur = object;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool numeric = !part.empty();
    for (char c : part) numeric = numeric && c >= '0' && c <= '9';
    cur = numeric ? get_item(cur, Value(static_cast<std::int64_t>(std::stoll(part)))) : get_item(cur, Value(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

}  // namespace roll::jinja
