#include "roll/config/compose.h"

#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "roll/core/error.h"

namespace fs = std::filesystem;

namespace roll::config {
namespace {

std::string with_yaml_ext(const std::string& name) {
  if (name.ends_with(".yaml") || name.ends_with(".yml")) return name;
  return name + ".yaml";
}

// Places `content` at the dotted `package` inside `target` (merging with what is there).
NodePtr merge_at_package(const NodePtr& target, const NodePtr& content, const std::string& package) {
  if (package.empty()) return merge(target, content);
  auto parts = split_path(package);
  NodePtr wrapped = content;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    auto m = Node::map(content->loc());
    m->set(*it, wrapped);
    wrapped = m;
  }
  return merge(target, wrapped);
}

struct DefaultsEntry {
  std::string path;     // file path relative to the including file's directory, without extension
  std::string package;  // "" = the including config's package
  bool is_self = false;
  bool optional = false;
  SourceLoc loc;
};

// Default package of a config-group entry: its directory inside the config tree ("../config/x" -> "config").
std::string group_of(const std::string& entry_path) {
  fs::path p(entry_path);
  std::string group;
  for (const auto& part : p.parent_path()) {
    const std::string s = part.string();
    if (s == ".." || s == "." || s.empty()) continue;
    group += group.empty() ? s : "." + s;
  }
  return group;
}

std::vector<DefaultsEntry> parse_defaults(const NodePtr& defaults, const std::string& file) {
  std::vector<DefaultsEntry> out;
  if (!defaults || defaults->is_null()) return out;
  if (!defaults->is_sequence())
    throw ConfigError("defaults", fmt::format("{}: 'defaults' must be a list, got a {}", defaults->loc().str(),
                                              defaults->kind_name()));
  for (const auto& item : defaults->items()) {
    DefaultsEntry e;
    e.loc = item->loc();
    std::string spec;
    std::string option;
    if (item->is_scalar()) {
      spec = item->text();
    } else if (item->is_map() && item->entries().size() == 1 && item->entries()[0].second->is_scalar()) {
      // `- group: option` / `- group@pkg: option` / `- override group: option`
      spec = item->entries()[0].first;
      option = item->entries()[0].second->text();
    } else {
      throw ConfigError("defaults", fmt::format("{}: unsupported defaults entry (expected '- path[@package]' or "
                                                "'- group: option')", item->loc().str()));
    }
    auto strip_prefix = [&](const std::string& prefix) {
      if (spec.rfind(prefix, 0) == 0) {
        spec = spec.substr(prefix.size());
        return true;
      }
      return false;
    };
    if (strip_prefix("optional ")) e.optional = true;
    strip_prefix("override ");
    if (spec == "_self_") {
      e.is_self = true;
      out.push_back(e);
      continue;
    }
    std::string pkg;
    bool has_pkg = false;
    if (auto at = spec.find('@'); at != std::string::npos) {
      pkg = spec.substr(at + 1);
      spec = spec.substr(0, at);
      has_pkg = true;
    }
    if (!option.empty()) {
      if (option == "null") continue;  // Hydra: a group selected as null is skipped
      e.path = spec + "/" + option;
      if (!has_pkg) pkg = group_of(spec + "/x");
    } else {
      e.path = spec;
      if (!has_pkg) pkg = group_of(spec);
    }
    if (pkg == "_here_") pkg.clear();
    if (pkg.rfind("_global_", 0) == 0) pkg = pkg.size() > 8 ? pkg.substr(9) : "";
    e.package = pkg;
    out.push_back(e);
  }
  return out;
}

NodePtr compose_file(const std::string& file, std::vector<std::string>& stack) {
  std::string canonical = fs::weakly_canonical(file).string();
  for (const auto& s : stack)
    if (s == canonical) {
      std::string chain;
      for (const auto& x : stack) chain += x + " -> ";
      throw ConfigError("defaults", fmt::format("include cycle: {}{}", chain, canonical));
    }
  stack.push_back(canonical);
  NodePtr own = load_yaml_file(file);
  if (!own->is_map())
    throw ConfigError("", fmt::format("{}: a config file must be a mapping at the top level, got a {}", file,
                                      own->kind_name()));
  NodePtr defaults = own->get("defaults");
  own->erase("defaults");
  auto entries = parse_defaults(defaults, file);
  bool has_self = false;
  for (const auto& e : entries) has_self |= e.is_self;
  if (!has_self) entries.push_back(DefaultsEntry{.is_self = true});  // Hydra >= 1.1: _self_ last

  const fs::path dir = fs::path(file).parent_path();
  NodePtr result = Node::map(own->loc());
  for (const auto& e : entries) {
    if (e.is_self) {
      result = merge(result, own);
      continue;
    }
    fs::path inc = dir / with_yaml_ext(e.path);
    if (!fs::exists(inc)) {
      if (e.optional) continue;
      throw ConfigError("defaults", fmt::format("{}: included config '{}' not found (looked for {})", e.loc.str(),
                                                e.path, inc.lexically_normal().string()));
    }
    NodePtr sub = compose_file(inc.lexically_normal().string(), stack);
    result = merge_at_package(result, sub, e.package);
  }
  stack.pop_back();
  return result;
}

}  // namespace

std::string find_config_file(const std::string& config_path, const std::string& config_name) {
  if (config_name.empty()) throw ConfigError("", "--config_name is required");
  fs::path dir = config_path.empty() ? fs::path(".") : fs::path(config_path);
  fs::path file = dir / with_yaml_ext(config_name);
  if (fs::exists(file)) return file.lexically_normal().string();
  if (!fs::exists(dir))
    throw ConfigError("", fmt::format("--config_path '{}' does not exist (it is resolved relative to the current "
                                      "directory {}, unlike ROLL's launchers which resolve it relative to examples/)",
                                      config_path, fs::current_path().string()));
  throw ConfigError("", fmt::format("config '{}' not found: {} does not exist", config_name, file.string()));
}

NodePtr compose(const ComposeRequest& request) {
  const std::string file = find_config_file(request.config_path, request.config_name);
  std::vector<std::string> stack;
  NodePtr root = compose_file(file, stack);
  for (const auto& o : request.overrides) apply_override(root, o);
  return root;
}

void apply_override(const NodePtr& root, const std::string& override_text) {
  const SourceLoc cli{"", -1};
  std::string text = override_text;
  bool remove = false;
  if (text.rfind("~", 0) == 0) {
    remove = true;
    text = text.substr(1);
  } else if (text.rfind("++", 0) == 0) {
    text = text.substr(2);
  } else if (text.rfind("+", 0) == 0) {
    text = text.substr(1);
  }
  std::string key = text;
  std::string value;
  auto eq = text.find('=');
  if (eq != std::string::npos) {
    key = text.substr(0, eq);
    value = text.substr(eq + 1);
  } else if (!remove) {
    throw ConfigError(text, fmt::format("override '{}' must have the form key=value (or ~key to delete)",
                                        override_text));
  }
  if (key.empty()) throw ConfigError("", fmt::format("override '{}' has an empty key", override_text));
  auto parts = split_path(key);
  NodePtr cur = root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    NodePtr next = cur->get(parts[i]);
    if (!next || next->is_null()) {
      if (remove) return;
      next = Node::map(cli);
      cur->set(parts[i], next);
    } else if (!next->is_map()) {
      throw ConfigError(key, fmt::format("override '{}': '{}' is a {} ({}), not a mapping", override_text,
                                         join_path(parts, i + 1), next->kind_name(), next->loc().str()));
    }
    cur = next;
  }
  if (remove) {
    cur->erase(parts.back());
    return;
  }
  // Hydra parses the value with its own grammar; YAML flow syntax covers what ROLL users write
  // (numbers, booleans, null, [a,b], {k: v}, quoted strings). An empty value is an empty string.
  NodePtr parsed = value.empty() ? Node::scalar("", true, cli) : parse_yaml_text(value, cli);
  NodePtr existing = cur->get(parts.back());
  cur->set(parts.back(), parsed);
  (void)existing;
}

}  // namespace roll::config
