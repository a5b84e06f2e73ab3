#pragma once
// The values a chat template computes with: Python's None, bool, int, float, str, list and dict,
// plus Jinja's Undefined, namespace() objects and callables (filters are not values; macros,
// globals and bound methods such as `s.startswith` are).
//
// Lists and dicts are immutable and shared: HF renders templates in an immutable sandbox, so
// copying a value never needs to copy its contents. Only a namespace is mutable, through
// `{% set ns.x = ... %}`, and it is shared by reference as in Python.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace roll::jinja {

class Value;
using ValueList = std::vector<Value>;

// A str-keyed dict that keeps insertion order, like a Python dict loaded from JSON (the order
// shows in tojson output, so it must survive).
class ValueDict {
 public:
  using Item = std::pair<std::string, Value>;
  const Value* find(std::string_view key) const;
  // Overwriting an existing key keeps its position, as in Python.
  void set(std::string key, Value value);
  const std::vector<Item>& items() const { return items_; }
  // Defined below Value: the size of a vector of pairs needs the pair's type complete (clang).
  std::size_t size() const;
  bool empty() const;

 private:
  std::vector<Item> items_;
};

// Arguments of a call: positional ones, then keyword ones in source order.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  // The argument at `index` or named `name`, else nullptr (Python's parameter binding).
  const Value* get(std::size_t index, std::string_view name) const;
};
using NativeFunction = std::function<Value(const CallArgs&)>;

class Value {
 public:
  enum class Kind : std::uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Function };

  Value();  // Undefined
  Value(bool b);
  Value(std::int64_t i);
  Value(int i) : Value(static_cast<std::int64_t>(i)) {}
  Value(double f);
  Value(std::string s);
  Value(const char* s) : Value(std::string(s)) {}
  // `hint` is what Jinja would say when the value is used: "'x' is undefined".
  static Value undefined(std::string hint);
  static Value none();
  static Value list(ValueList items);
  // A tuple is a list that prints as (a, b): literals like (1, 2) and the pairs of |items.
  static Value tuple(ValueList items);
  // A "safe" string is markupsafe's Markup (from |safe, |escape): `+` with a plain str
  // HTML-escapes the plain one, as in Python.
  static Value safe_string(std::string s);
  static Value dict(ValueDict items);
  static Value make_namespace(ValueDict attrs);
  static Value function(std::string name, NativeFunction fn);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::Undefined; }
  bool is_none() const { return kind() == Kind::None; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_float() const { return kind() == Kind::Float; }
  // Python numbers: bool is an int subclass.
  bool is_number() const { return is_bool() || is_int() || is_float(); }
  bool is_string() const { return kind() == Kind::String; }
  bool is_list() const { return kind() == Kind::List; }
  bool is_tuple() const { return is_list() && flag_; }
  bool is_safe() const { return is_string() && flag_; }
  bool is_dict() const { return kind() == Kind::Dict; }
  bool is_namespace() const { return kind() == Kind::Namespace; }
  bool is_function() const { return kind() == Kind::Function; }

  bool as_bool() const { return std::get<bool>(v_); }
  std::int64_t as_int() const;  // bool or int
  double as_double() const;     // any number
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const ValueList& as_list() const { return *std::get<ListPtr>(v_); }
  const ValueDict& as_dict() const { return *std::get<DictPtr>(v_); }
  ValueDict& namespace_attrs() const { return *std::get<NamespacePtr>(v_); }
  const std::string& undefined_hint() const { return std::get<Undefined>(v_).hint; }
  const std::string& function_name() const { return std::get<FunctionPtr>(v_)->name; }
  Value call(const CallArgs& args) const { return std::get<FunctionPtr>(v_)->fn(args); }
  // True when both are the same namespace or function object (Python `is`).
  bool same_object(const Value& other) const;

  bool truthy() const;  // Python bool()
  // What Python calls the type in messages: "int", "str", "dict", "NoneType", ...
  std::string type_name() const;

 private:
  struct Undefined {
    std::string hint;
  };
  struct None {};
  struct Callable {
    std::string name;
    NativeFunction fn;
  };
  using ListPtr = std::shared_ptr<const ValueList>;
  using DictPtr = std::shared_ptr<const ValueDict>;
  using NamespacePtr = std::shared_ptr<ValueDict>;
  using FunctionPtr = std::shared_ptr<const Callable>;
  template <std::size_t I, class T>
  Value(std::in_place_index_t<I> tag, T&& x) : v_(tag, std::forward<T>(x)) {}
  // Order matches Kind.
  std::variant<Undefined, None, bool, std::int64_t, double, std::string, ListPtr, DictPtr, NamespacePtr,
               FunctionPtr>
      v_;
  bool flag_ = false;  // tuple for a list, Markup for a string
};

// Python semantics; errors (unorderable types) are roll::Error without a location.
inline std::size_t ValueDict::size() const { return items_.size(); }
inline bool ValueDict::empty() const { return items_.empty(); }

bool equals(const Value& a, const Value& b);  // ==
bool less(const Value& a, const Value& b);    // <
std::string to_str(const Value& v);           // str(); Undefined renders as ""
std::string to_repr(const Value& v);          // repr()

}  // namespace roll::jinja
