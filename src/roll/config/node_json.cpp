#include "roll/config/node_json.h"

#include <cerrno>
#include <cstdlib>

#include "roll/config/diagnostics.h"
#include "roll/config/reader.h"

namespace roll::config {
namespace {

nlohmann::ordered_json scalar_json(const NodePtr& node) {
  const std::string& t = node->text();
  if (node->quoted()) return t;
  if (t == "true" || t == "True") return true;
  if (t == "false" || t == "False") return false;
  char* end = nullptr;
  errno = 0;
  const long long i = std::strtoll(t.c_str(), &end, 10);
  if (!t.empty() && *end == '\0' && errno == 0) return static_cast<int64_t>(i);
  double d = 0;
  Diagnostics scratch;  // a string is not an error here
  if (read_double(node, "", d, scratch)) return d;
  return t;
}

}  // namespace

nlohmann::ordered_json to_json(const NodePtr& node) {
  if (!node || node->is_null()) return nullptr;
  if (node->is_scalar()) return scalar_json(node);
  if (node->is_sequence()) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (const auto& item : node->items()) a.push_back(to_json(item));
    return a;
  }
  nlohmann::ordered_json o = nlohmann::ordered_json::object();
  for (const auto& [k, v] : node->entries()) o[k] = to_json(v);
  return o;
}

}  // namespace roll::config
