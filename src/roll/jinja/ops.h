#pragma once
// Python's operators on template values, with Jinja's lookup rules: `a.b` tries the attribute
// (str and dict methods, namespace attributes) before the item, `a[b]` the item before the
// attribute, and a missing one yields Undefined rather than an error. Errors (type mismatches,
// using an Undefined) are roll::Error; the renderer adds the template line.
#include <optional>
#include <string>

#include "roll/jinja/ast.h"
#include "roll/jinja/value.h"

namespace roll::jinja {

Value get_attr(const Value& object, const std::string& name);
Value get_item(const Value& object, const Value& key);
Value slice(const Value& object, std::optional<std::int64_t> start, std::optional<std::int64_t> stop,
            std::optional<std::int64_t> step);
// Arithmetic and `~`; And/Or short-circuit in the renderer.
Value binary_op(BinaryExpr::Op op, const Value& a, const Value& b);
Value negate(const Value& v);
bool contains(const Value& container, const Value& item);  // item in container
// The items a for loop (or list()) sees: list items, dict keys, string characters; an Undefined
// iterates as empty.
ValueList iterate(const Value& v);
// Jinja's make_attrgetter: "a.b.0" walks attributes and integer items.
Value get_path(const Value& object, const std::string& path);

}  // namespace roll::jinja
