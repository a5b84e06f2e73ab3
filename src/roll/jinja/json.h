#pragma once
// JSON in and out of templates. The render context arrives as nlohmann JSON (use ordered_json to
// keep a document's key order: it shows in `tojson` output); `tojson` writes the text of Python's
// json.dumps(x, ensure_ascii=False, indent=..., separators=..., sort_keys=...), which is what HF's
// replacement of Jinja's filter produces.
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "roll/jinja/value.h"

namespace roll::jinja {

Value from_json(const nlohmann::json& j);
Value from_json(const nlohmann::ordered_json& j);

struct DumpOptions {
  std::optional<std::string> indent;          // json.dumps indent (an int n becomes n spaces)
  std::optional<std::string> item_separator;  // default ", " or "," when indenting
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;  // escape non-ASCII as \uXXXX (HF defaults to false)
};
// Undefined, namespaces and functions are not serialisable: roll::Error, as Python's TypeError.
std::string dumps(const Value& v, const DumpOptions& options = {});

}  // namespace roll::jinja
