#include "roll/jinja/value.h"

#include "roll/core/error.h"
#include "roll/jinja/python.h"

namespace roll::jinja {

const Value* ValueDict::find(std::string_view key) const {
  for (const auto& [k, v] : items_)
    if (k == key) return &v;
  return nullptr;
}

void ValueDict::set(std::string key, Value value) {
  for (auto& [k, v] : items_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  items_.emplace_back(std::move(key), std::move(value));
}

const Value* CallArgs::get(std::size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [k, v] : keyword)
    if (k == name) return &v;
  return nullptr;
}

Value::Value() : v_(Undefined{}) {}
Value::Value(bool b) : v_(std::in_place_index<2>, b) {}
Value::Value(std::int64_t i) : v_(std::in_place_index<3>, i) {}
Value::Value(double f) : v_(std::in_place_index<4>, f) {}
Value::Value(std::string s) : v_(std::in_place_index<5>, std::move(s)) {}

Value Value::undefined(std::string hint) { return Value(std::in_place_index<0>, Undefined{std::move(hint)}); }
Value Value::none() { return Value(std::in_place_index<1>, None{}); }

Value Value::list(ValueList items) {
  return Value(std::in_place_index<6>, std::make_shared<const ValueList>(std::move(items)));
}

Value Value::tuple(ValueList items) {
  Value v = list(std::move(items));
  v.flag_ = true;
  return v;
}

Value Value::safe_string(std::string s) {
  Value v(std::move(s));
  v.flag_ = true;
  return v;
}

Value Value::dict(ValueDict items) {
  return Value(std::in_place_index<7>, std::make_shared<const ValueDict>(std::move(items)));
}

Value Value::make_namespace(ValueDict attrs) {
  return Value(std::in_place_index<8>, std::make_shared<ValueDict>(std::move(attrs)));
}

Value Value::function(std::string name, NativeFunction fn) {
  return Value(std::in_place_index<9>, std::make_shared<const Callable>(Callable{std::move(name), std::move(fn)}));
}

std::int64_t Value::as_int() const { return is_bool() ? (as_bool() ? 1 : 0) : std::get<std::int64_t>(v_); }

double Value::as_double() const {
  return is_float() ? std::get<double>(v_) : static_cast<double>(as_int());
}

bool Value::same_object(const Value& other) const {
  if (kind() != other.kind()) return false;
  if (is_namespace()) return std::get<NamespacePtr>(v_) == std::get<NamespacePtr>(other.v_);
  if (is_function()) return std::get<FunctionPtr>(v_) == std::get<FunctionPtr>(other.v_);
  if (is_list()) return std::get<ListPtr>(v_) == std::get<ListPtr>(other.v_);
  if (is_dict()) return std::get<DictPtr>(v_) == std::get<DictPtr>(other.v_);
  return equals(*this, other);  // Python interns small values; close enough for `sameas`
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return as_bool();
    case Kind::Int: return as_int() != 0;
    case Kind::Float: return as_double() != 0.0;
    case Kind::String: return !as_string().empty();
    case Kind::List: return !as_list().empty();
    case Kind::Dict: return !as_dict().empty();
    case Kind::Namespace:
    case Kind::Function: return true;
  }
  return false;
}

std::string Value::type_name() const {
  switch (kind()) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return flag_ ? "Markup" : "str";
    case Kind::List: return flag_ ? "tuple" : "list";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "Namespace";
    case Kind::Function: return "function";
  }
  return "object";
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return true;
    case Value::Kind::String: return a.as_string() == b.as_string();
    case Value::Kind::List: {
      const auto &x = a.as_list(), &y = b.as_list();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (!equals(x[i], y[i])) return false;
      return true;
    }
    case Value::Kind::Dict: {
      const auto &x = a.as_dict(), &y = b.as_dict();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.items()) {
        const Value* other = y.find(k);
        if (!other || !equals(v, *other)) return false;
      }
      return true;
    }
    default: return a.same_object(b);
  }
}

bool less(const Value& a, const Value& b) {
  if (a.is_undefined()) throw roll::Error(a.undefined_hint());
  if (b.is_undefined()) throw roll::Error(b.undefined_hint());
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();  // UTF-8 keeps code-point order
  if (a.is_list() && b.is_list()) {
    const auto &x = a.as_list(), &y = b.as_list();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals(x[i], y[i])) continue;
      return less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  throw roll::Error("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

namespace {
std::string join_repr(const ValueList& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += to_repr(items[i]);
  }
  return out;
}

std::string dict_repr(const ValueDict& d) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : d.items()) {
    if (!first) out += ", ";
    first = false;
    out += py::repr_str(k) + ": " + to_repr(v);
  }
  return out + "}";
}
}  // namespace

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.as_bool() ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.as_int());
    case Value::Kind::Float: return py::repr_float(v.as_double());
    case Value::Kind::String: return v.as_string();
    case Value::Kind::List:
      if (v.is_tuple()) return "(" + join_repr(v.as_list()) + (v.as_list().size() == 1 ? ",)" : ")");
      return "[" + join_repr(v.as_list()) + "]";
    case Value::Kind::Dict: return dict_repr(v.as_dict());
    case Value::Kind::Namespace: return "<Namespace " + dict_repr(v.namespace_attrs()) + ">";
    case Value::Kind::Function: return "<function " + v.function_name() + ">";
  }
  return "";
}

std::string to_repr(const Value& v) {
  if (v.is_string()) return py::repr_str(v.as_string());
  if (v.is_undefined()) return "Undefined";
  return to_str(v);
}

}  // namespace roll::jinja
