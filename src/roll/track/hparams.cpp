#include "roll/track/hparams.h"

#include <cerrno>
#include <cstdlib>

#include "roll/config/diagnostics.h"
#include "roll/config/reader.h"

namespace roll::track {
namespace {

using config::Node;
using config::NodePtr;

nlohmann::json scalar_json(const Node& n, const NodePtr& ptr) {
  const std::string& t = n.text();
  if (n.quoted()) return t;
  if (t == "true" || t == "True") return true;
  if (t == "false" || t == "False") return false;
  char* end = nullptr;
  errno = 0;
  const long long i = std::strtoll(t.c_str(), &end, 10);
  if (!t.empty() && *end == '\0' && errno == 0) return static_cast<int64_t>(i);
  double d = 0;
  config::Diagnostics scratch;  // a string is not an error here
  if (config::read_double(ptr, "", d, scratch)) return d;
  return t;
}

// The tree as JSON, scalars typed.
nlohmann::json to_json(const NodePtr& node) {
  if (!node || node->is_null()) return nullptr;
  if (node->is_scalar()) return scalar_json(*node, node);
  if (node->is_sequence()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& item : node->items()) a.push_back(to_json(item));
    return a;
  }
  nlohmann::json o = nlohmann::json::object();
  for (const auto& [k, v] : node->entries()) o[k] = to_json(v);
  return o;
}

void flatten_into(const NodePtr& node, const std::string& prefix, nlohmann::json& out) {
  if (node && node->is_map() && !node->entries().empty()) {
    for (const auto& [k, v] : node->entries()) flatten_into(v, prefix.empty() ? k : prefix + "." + k, out);
    return;
  }
  nlohmann::json v = to_json(node);
  if (v.is_null()) out[prefix] = "None";
  else if (v.is_structured()) out[prefix] = v.dump();
  else out[prefix] = std::move(v);
}

std::string escape_cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += "<br>";
    else out.push_back(c);
  }
  return out;
}

}  // namespace

nlohmann::json flatten_config(const NodePtr& tree) {
  nlohmann::json out = nlohmann::json::object();
  if (tree && tree->is_map())
    for (const auto& [k, v] : tree->entries()) flatten_into(v, k, out);
  return out;
}

std::string hparams_markdown(const nlohmann::json& flat) {
  std::string md = "| name | value |\n|---|---|\n";
  for (const auto& [k, v] : flat.items())
    md += "| " + escape_cell(k) + " | " + escape_cell(v.is_string() ? v.get<std::string>() : v.dump()) + " |\n";
  return md;
}

}  // namespace roll::track
