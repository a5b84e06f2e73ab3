#pragma once
// What a template can call by name: Jinja's filters and tests (those chat templates use), the
// Python methods of str and dict, and the globals (namespace, range, dict, plus HF's
// raise_exception and strftime_now). HF overrides `tojson` to json.dumps(x, ensure_ascii=False,
// indent=..., separators=..., sort_keys=...), and so do we. Errors are roll::Error.
#include <optional>
#include <string>

#include "roll/jinja/value.h"

namespace roll::jinja {

Value apply_filter(const std::string& name, const Value& value, const CallArgs& args);
bool apply_test(const std::string& name, const Value& value, const CallArgs& args);
bool has_filter(const std::string& name);
bool has_test(const std::string& name);
// The bound method `object.name` of a str or dict, or nullopt when there is none.
std::optional<Value> method(const Value& object, const std::string& name);
// Global functions visible to every template.
const ValueDict& globals();

}  // namespace roll::jinja
