#include "roll/config/interpolate.h"

#include <fmt/format.h>

#include <cstdlib>
#include <ctime>
#include <unordered_map>
#include <unordered_set>

#include "roll/core/error.h"

namespace roll::config {
namespace {

// True when `s` holds a "${" (escaped ones too: resolving turns "\\${" into a literal "${").
bool has_interpolation(const std::string& s) { return s.find("${") != std::string::npos; }

// Finds the '}' closing the "${" at `open` (which points at '$'), honouring nesting.
size_t find_close(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '$' && i + 1 < s.size() && s[i + 1] == '{') {
      ++depth;
      ++i;
    } else if (s[i] == '}') {
      if (--depth == 0) return i;
    }
  }
  return std::string::npos;
}

class Resolver {
 public:
  Resolver(NodePtr root, const ResolveOptions& options, std::set<std::string>* referenced)
      : root_(std::move(root)), options_(options), referenced_(referenced) {}

  NodePtr resolve_node(const NodePtr& node, const std::string& path) {
    if (auto it = done_.find(node.get()); it != done_.end()) return it->second;
    NodePtr out;
    if (node->is_scalar() && has_interpolation(node->text())) {
      if (in_progress_.count(node.get())) {
        std::string chain;
        for (const auto& p : chain_) chain += p + " -> ";
        throw ConfigError(path, fmt::format("{}: interpolation cycle: {}{}", node->loc().str(), chain, path));
      }
      in_progress_.insert(node.get());
      chain_.push_back(path);
      out = evaluate(node, path);
      chain_.pop_back();
      in_progress_.erase(node.get());
    } else if (node->is_map()) {
      out = Node::map(node->loc());
      for (const auto& [k, v] : node->entries()) out->set(k, resolve_node(v, path.empty() ? k : path + "." + k));
    } else if (node->is_sequence()) {
      out = Node::sequence(node->loc());
      size_t i = 0;
      for (const auto& item : node->items()) out->items().push_back(resolve_node(item, path + "." + std::to_string(i++)));
    } else {
      out = node;
    }
    done_[node.get()] = out;
    return out;
  }

 private:
  // Looks a dotted key up from the root, resolving interpolated containers on the way.
  NodePtr lookup(const std::string& ref, const std::string& from_path, const NodePtr& from_node) {
    std::vector<std::string> parts;
    if (!ref.empty() && ref[0] == '.') {
      // Relative: one leading dot = the mapping holding `from_path`; each further dot goes up a level.
      size_t dots = 0;
      while (dots < ref.size() && ref[dots] == '.') ++dots;
      auto base = split_path(from_path);
      if (dots > base.size())
        throw ConfigError(from_path, fmt::format("{}: key '{}': relative interpolation ${{{}}} goes above the root",
                                                 from_node->loc().str(), from_path, ref));
      base.resize(base.size() - dots);
      parts = base;
      for (const auto& p : split_path(ref.substr(dots))) parts.push_back(p);
    } else {
      parts = split_path(ref);
    }
    NodePtr cur = root_;
    std::string cur_path;
    for (size_t i = 0; i < parts.size(); ++i) {
      // Follow references (`a: ${b}`) but do not resolve whole containers: resolving the root
      // while resolving one of its keys would look like a cycle.
      if (cur->is_scalar() && has_interpolation(cur->text())) cur = resolve_node(cur, cur_path);
      NodePtr next;
      if (cur->is_map()) {
        next = cur->get(parts[i]);
      } else if (cur->is_sequence()) {
        char* end = nullptr;
        long idx = std::strtol(parts[i].c_str(), &end, 10);
        if (end && *end == '\0' && idx >= 0 && static_cast<size_t>(idx) < cur->items().size()) next = cur->items()[idx];
      }
      if (!next)
        throw ConfigError(from_path, fmt::format("{}: key '{}': interpolation ${{{}}} refers to '{}', which does not "
                                                 "exist",
                                                 from_node->loc().str(), from_path, ref, join_path(parts, i + 1)));
      cur_path = join_path(parts, i + 1);
      cur = next;
    }
    if (referenced_) referenced_->insert(cur_path);
    return resolve_node(cur, cur_path);
  }

  std::optional<std::string> env(const std::string& name) {
    if (options_.getenv) return options_.getenv(name);
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  }

  // Evaluates the inside of one ${...}; returns a node (whole-node references keep their type).
  NodePtr evaluate_expr(const std::string& expr_raw, const NodePtr& node, const std::string& path) {
    // Nested interpolations inside the expression (e.g. resolver defaults) are expanded first.
    std::string expr = has_interpolation(expr_raw) ? interpolate_string(expr_raw, node, path) : expr_raw;
    auto colon = expr.find(':');
    auto is_ident = [](const std::string& s) {
      if (s.empty()) return false;
      for (char c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
      return true;
    };
    if (colon != std::string::npos && is_ident(expr.substr(0, colon))) {
      const std::string name = expr.substr(0, colon);
      const std::string args = expr.substr(colon + 1);
      if (name == "oc.env") {
        std::string var = args;
        std::optional<std::string> def;
        if (auto comma = args.find(','); comma != std::string::npos) {
          var = args.substr(0, comma);
          def = args.substr(comma + 1);
          // OmegaConf strips whitespace and quotes around the default.
          while (!def->empty() && def->front() == ' ') def->erase(0, 1);
          if (def->size() >= 2 && (def->front() == '\'' || def->front() == '"') && def->back() == def->front())
            def = def->substr(1, def->size() - 2);
        }
        if (auto v = env(var)) return Node::scalar(*v, false, node->loc());
        if (def) return *def == "null" ? Node::null(node->loc()) : Node::scalar(*def, false, node->loc());
        throw ConfigError(path, fmt::format("{}: key '{}': environment variable '{}' is not set and "
                                            "${{oc.env:{}}} has no default",
                                            node->loc().str(), path, var, var));
      }
      if (name == "now") {
        std::time_t t = std::time(nullptr);
        std::tm tm{};
        localtime_r(&t, &tm);
        char buf[256];
        size_t n = std::strftime(buf, sizeof buf, args.c_str(), &tm);
        return Node::scalar(std::string(buf, n), true, node->loc());
      }
      throw ConfigError(path, fmt::format("{}: key '{}': resolver '{}' is not supported (rollcpp supports "
                                          "${{oc.env:VAR[,default]}} and ${{now:format}})",
                                          node->loc().str(), path, name));
    }
    return lookup(expr, path, node);
  }

  std::string interpolate_string(const std::string& s, const NodePtr& node, const std::string& path) {
    std::string out;
    size_t i = 0;
    while (i < s.size()) {
      if (s[i] == '\\' && i + 2 < s.size() && s[i + 1] == '$' && s[i + 2] == '{') {
        out += "${";
        i += 3;
        continue;
      }
      if (s[i] == '$' && i + 1 < s.size() && s[i + 1] == '{') {
        size_t close = find_close(s, i);
        if (close == std::string::npos)
          throw ConfigError(path, fmt::format("{}: key '{}': unterminated interpolation in '{}'", node->loc().str(),
                                              path, s));
        NodePtr v = evaluate_expr(s.substr(i + 2, close - i - 2), node, path);
        if (v->is_map() || v->is_sequence())
          throw ConfigError(path, fmt::format("{}: key '{}': cannot insert the {} '{}' into the string '{}'",
                                              node->loc().str(), path, v->kind_name(), s.substr(i, close - i + 1), s));
        out += v->is_null() ? "None" : v->text();
        i = close + 1;
        continue;
      }
      out.push_back(s[i++]);
    }
    return out;
  }

  NodePtr evaluate(const NodePtr& node, const std::string& path) {
    const std::string& s = node->text();
    // A value that is exactly one ${...} is a node reference and keeps the referenced type.
    if (s.size() >= 3 && s[0] == '$' && s[1] == '{' && find_close(s, 0) == s.size() - 1) {
      NodePtr v = evaluate_expr(s.substr(2, s.size() - 3), node, path);
      return v;
    }
    return Node::scalar(interpolate_string(s, node, path), false, node->loc());
  }

  NodePtr root_;
  const ResolveOptions& options_;
  std::unordered_map<const Node*, NodePtr> done_;
  std::unordered_set<const Node*> in_progress_;
  std::vector<std::string> chain_;
  std::set<std::string>* referenced_;
};

}  // namespace

NodePtr resolve(const NodePtr& root, const ResolveOptions& options, std::set<std::string>* referenced) {
  Resolver r(root, options, referenced);
  return r.resolve_node(root, "");
}

}  // namespace roll::config
