#include "roll/track/hparams.h"

#include "roll/config/node_json.h"

namespace roll::track {
namespace {

using config::NodePtr;

void flatten_into(const NodePtr& node, const std::string& prefix, nlohmann::json& out) {
  if (node && node->is_map() && !node->entries().empty()) {
    for (const auto& [k, v] : node->entries()) flatten_into(v, prefix.empty() ? k : prefix + "." + k, out);
    return;
  }
  nlohmann::json v = config::to_json(node);
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
