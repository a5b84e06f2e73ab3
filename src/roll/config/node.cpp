#include "roll/config/node.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fmt/format.h>

#include "roll/core/error.h"

namespace roll::config {

std::string SourceLoc::str() const {
  if (file.empty()) return line < 0 ? "<command line>" : "";
  if (line <= 0) return file;
  return fmt::format("{}:{}", file, line);
}

NodePtr Node::null(SourceLoc loc) {
  auto n = std::make_shared<Node>();
  n->kind_ = Kind::Null;
  n->loc_ = std::move(loc);
  return n;
}
NodePtr Node::scalar(std::string text, bool quoted, SourceLoc loc) {
  auto n = std::make_shared<Node>();
  n->kind_ = Kind::Scalar;
  n->text_ = std::move(text);
  n->quoted_ = quoted;
  n->loc_ = std::move(loc);
  return n;
}
NodePtr Node::sequence(SourceLoc loc) {
  auto n = std::make_shared<Node>();
  n->kind_ = Kind::Sequence;
  n->loc_ = std::move(loc);
  return n;
}
NodePtr Node::map(SourceLoc loc) {
  auto n = std::make_shared<Node>();
  n->kind_ = Kind::Map;
  n->loc_ = std::move(loc);
  return n;
}

const char* Node::kind_name() const {
  switch (kind_) {
    case Kind::Null: return "null";
    case Kind::Scalar: return "scalar";
    case Kind::Sequence: return "list";
    case Kind::Map: return "mapping";
  }
  return "?";
}

NodePtr Node::get(const std::string& key) const {
  for (const auto& [k, v] : entries_)
    if (k == key) return v;
  return nullptr;
}

void Node::set(const std::string& key, NodePtr value) {
  for (auto& [k, v] : entries_)
    if (k == key) {
      v = std::move(value);
      return;
    }
  entries_.emplace_back(key, std::move(value));
}

bool Node::erase(const std::string& key) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->first == key) {
      entries_.erase(it);
      return true;
    }
  return false;
}

NodePtr Node::clone() const {
  auto n = std::make_shared<Node>(*this);
  for (auto& item : n->items_) item = item->clone();
  for (auto& [k, v] : n->entries_) v = v->clone();
  return n;
}

NodePtr merge(const NodePtr& base, const NodePtr& overlay) {
  if (!base) return overlay ? overlay->clone() : nullptr;
  if (!overlay) return base->clone();
  if (!base->is_map() || !overlay->is_map()) return overlay->clone();
  NodePtr out = base->clone();
  out->set_loc(overlay->loc());
  for (const auto& [k, v] : overlay->entries()) {
    NodePtr existing = out->get(k);
    out->set(k, existing ? merge(existing, v) : v->clone());
  }
  return out;
}

std::vector<std::string> split_path(const std::string& dotted) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : dotted) {
    if (c == '.') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  parts.push_back(cur);
  return parts;
}

std::string join_path(const std::vector<std::string>& parts, size_t n) {
  std::string out;
  for (size_t i = 0; i < parts.size() && i < n; ++i) {
    if (i) out.push_back('.');
    out += parts[i];
  }
  return out;
}

namespace {

NodePtr from_yaml(const YAML::Node& y, const std::string& file, const std::string& path) {
  SourceLoc loc{file, y.Mark().line >= 0 ? y.Mark().line + 1 : 0};
  switch (y.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return Node::null(loc);
    case YAML::NodeType::Scalar:
      // yaml-cpp tags non-plain (quoted or block) scalars "!": those are strings whatever they look like.
      return Node::scalar(y.Scalar(), y.Tag() == "!", loc);
    case YAML::NodeType::Sequence: {
      auto seq = Node::sequence(loc);
      size_t i = 0;
      for (const auto& item : y) seq->items().push_back(from_yaml(item, file, path + "." + std::to_string(i++)));
      return seq;
    }
    case YAML::NodeType::Map: {
      auto map = Node::map(loc);
      for (const auto& kv : y) {
        if (!kv.first.IsScalar())
          throw ConfigError(path, fmt::format("{}:{}: mapping keys must be scalars (under '{}')", file,
                                              kv.first.Mark().line + 1, path));
        const std::string key = kv.first.Scalar();
        if (map->has(key))
          throw ConfigError(path.empty() ? key : path + "." + key,
                            fmt::format("{}:{}: duplicate key '{}'", file, kv.first.Mark().line + 1, key));
        map->set(key, from_yaml(kv.second, file, path.empty() ? key : path + "." + key));
      }
      return map;
    }
  }
  return Node::null(loc);
}

void emit(YAML::Emitter& out, const NodePtr& node) {
  switch (node->kind()) {
    case Node::Kind::Null:
      out << YAML::Null;
      break;
    case Node::Kind::Scalar:
      if (node->quoted() && node->text().find('\n') == std::string::npos)
        out << YAML::DoubleQuoted << node->text();
      else
        out << node->text();
      break;
    case Node::Kind::Sequence:
      out << YAML::BeginSeq;
      for (const auto& item : node->items()) emit(out, item);
      out << YAML::EndSeq;
      break;
    case Node::Kind::Map:
      out << YAML::BeginMap;
      for (const auto& [k, v] : node->entries()) {
        out << YAML::Key << k << YAML::Value;
        emit(out, v);
      }
      out << YAML::EndMap;
      break;
  }
}

}  // namespace

NodePtr load_yaml_file(const std::string& path) {
  if (!std::filesystem::exists(path)) throw ConfigError("", fmt::format("config file not found: {}", path));
  YAML::Node y;
  try {
    y = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw ConfigError("", fmt::format("{}:{}: YAML syntax error: {}", path, e.mark.line + 1, e.msg));
  }
  NodePtr n = from_yaml(y, path, "");
  if (n->is_null()) return Node::map(SourceLoc{path, 1});  // an empty file is an empty mapping
  return n;
}

NodePtr parse_yaml_text(const std::string& text, const SourceLoc& origin) {
  YAML::Node y;
  try {
    y = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError("", fmt::format("{}: cannot parse '{}': {}", origin.str(), text, e.msg));
  }
  NodePtr n = from_yaml(y, origin.file, "");
  // Values from the command line carry the command line as their location.
  std::vector<NodePtr> stack{n};
  while (!stack.empty()) {
    NodePtr cur = stack.back();
    stack.pop_back();
    cur->set_loc(origin);
    for (auto& item : cur->items()) stack.push_back(item);
    for (auto& [k, v] : cur->entries()) stack.push_back(v);
  }
  return n;
}

std::string to_yaml(const NodePtr& node) {
  YAML::Emitter out;
  emit(out, node);
  return out.c_str();
}

}  // namespace roll::config
