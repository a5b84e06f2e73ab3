#include "roll/config/reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

#include "roll/config/device_mapping.h"

namespace roll::config {
namespace {

std::string where(const NodePtr& node) {
  std::string w = node ? node->loc().str() : "";
  return w.empty() ? "" : w + ": ";
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

void type_error(const NodePtr& node, const std::string& path, const std::string& expected, Diagnostics& diag) {
  std::string got = node->is_scalar() ? fmt::format("'{}'", node->text()) : fmt::format("a {}", node->kind_name());
  diag.error(path, fmt::format("{}key '{}': expected {}, got {}", where(node), path, expected, got));
}

bool parse_double_text(const std::string& text, double& out) {
  std::string t = lower(text);
  if (t == ".inf" || t == "+.inf" || t == "inf" || t == "+inf") {
    out = INFINITY;
    return true;
  }
  if (t == "-.inf" || t == "-inf") {
    out = -INFINITY;
    return true;
  }
  if (t == ".nan" || t == "nan") {
    out = NAN;
    return true;
  }
  if (t.empty()) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(t.c_str(), &end);
  return end && *end == '\0' && errno == 0;
}

// --- conversions for each field type -------------------------------------------------------

bool convert(const NodePtr& n, const std::string& p, bool& out, Diagnostics& d) { return read_bool(n, p, out, d); }
bool convert(const NodePtr& n, const std::string& p, int64_t& out, Diagnostics& d) { return read_int(n, p, out, d); }
bool convert(const NodePtr& n, const std::string& p, double& out, Diagnostics& d) { return read_double(n, p, out, d); }
bool convert(const NodePtr& n, const std::string& p, int& out, Diagnostics& d) {
  int64_t v = 0;
  if (!read_int(n, p, v, d)) return false;
  out = static_cast<int>(v);
  return true;
}
bool convert(const NodePtr& n, const std::string& p, std::string& out, Diagnostics& d) {
  if (!n->is_scalar()) {
    type_error(n, p, "a string", d);
    return false;
  }
  out = n->text();
  return true;
}
bool convert(const NodePtr& n, const std::string& p, NodePtr& out, Diagnostics&) {
  out = n;
  return true;
}
template <typename T>
bool convert(const NodePtr& n, const std::string& p, std::optional<T>& out, Diagnostics& d) {
  if (n->is_null()) {
    out.reset();
    return true;
  }
  T v{};
  if (!convert(n, p, v, d)) return false;
  out = std::move(v);
  return true;
}
template <typename T>
bool convert(const NodePtr& n, const std::string& p, std::vector<T>& out, Diagnostics& d) {
  out.clear();
  if (n->is_null()) return true;
  if constexpr (std::is_same_v<T, std::string>) {
    if (n->is_scalar()) {  // ROLL accepts `file_name: a.jsonl` as well as a list
      out.push_back(n->text());
      return true;
    }
  }
  if (!n->is_sequence()) {
    type_error(n, p, "a list", d);
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < n->items().size(); ++i) {
    T v{};
    if (convert(n->items()[i], fmt::format("{}.{}", p, i), v, d))
      out.push_back(std::move(v));
    else
      ok = false;
  }
  return ok;
}
template <typename T>
bool convert(const NodePtr& n, const std::string& p, Ordered<T>& out, Diagnostics& d) {
  out.clear();
  if (n->is_null()) return true;
  if (!n->is_map()) {
    type_error(n, p, "a mapping", d);
    return false;
  }
  bool ok = true;
  for (const auto& [k, v] : n->entries()) {
    T value{};
    if (v->is_null() && std::is_same_v<T, std::string>) {
      out.emplace_back(k, value);
      continue;
    }
    if (convert(v, p + "." + k, value, d))
      out.emplace_back(k, std::move(value));
    else
      ok = false;
  }
  return ok;
}

// --- the loading visitor -------------------------------------------------------------------

class Reader {
 public:
  Reader(NodePtr map, std::string path, Diagnostics& diag) : map_(std::move(map)), path_(std::move(path)), diag_(diag) {}

  template <typename T>
  void operator()(const char* key, T& field) {
    if (NodePtr n = take(key)) convert(n, sub(key), field, diag_);
  }

  void inert(const char* key) { take(key); }

  template <typename S>
  void nested(const char* key, S& s) {
    NodePtr n = take(key);
    if (!n || n->is_null()) return;
    if (!n->is_map()) return type_error(n, sub(key), "a mapping", diag_);
    read_struct(n, sub(key), s);
  }
  template <typename S>
  void nested(const char* key, std::optional<S>& s) {
    NodePtr n = take(key);
    if (!n || n->is_null()) return;
    if (!n->is_map()) return type_error(n, sub(key), "a mapping", diag_);
    s.emplace();
    read_struct(n, sub(key), *s);
  }
  template <typename S>
  void nested_map(const char* key, Ordered<S>& out) {
    NodePtr n = take(key);
    if (!n || n->is_null()) return;
    if (!n->is_map()) return type_error(n, sub(key), "a mapping", diag_);
    for (const auto& [k, v] : n->entries()) {
      S s{};
      const std::string p = sub(key) + "." + k;
      if (v->is_null()) {
        out.emplace_back(k, std::move(s));
        continue;
      }
      if (!v->is_map()) {
        type_error(v, p, "a mapping", diag_);
        continue;
      }
      read_struct(v, p, s);
      out.emplace_back(k, std::move(s));
    }
  }
  template <typename S>
  void nested_list(const char* key, std::vector<S>& out) {
    NodePtr n = take(key);
    if (!n || n->is_null()) return;
    if (!n->is_sequence()) return type_error(n, sub(key), "a list", diag_);
    for (size_t i = 0; i < n->items().size(); ++i) {
      const auto& item = n->items()[i];
      const std::string p = fmt::format("{}.{}", sub(key), i);
      if (!item->is_map()) {
        type_error(item, p, "a mapping", diag_);
        continue;
      }
      S s{};
      read_struct(item, p, s);
      out.push_back(std::move(s));
    }
  }
  void device_mapping(const char* key, std::optional<std::vector<int>>& out) {
    NodePtr n = take(key);
    if (!n || n->is_null()) return;
    const std::string p = sub(key);
    try {
      if (n->is_scalar()) {
        out = parse_device_mapping(n->text(), p);
      } else if (n->is_sequence()) {
        std::vector<int> ids;
        if (convert(n, p, ids, diag_)) out = parse_device_mapping(fmt::format("[{}]", fmt::join(ids, ",")), p);
      } else {
        type_error(n, p, "a device list such as list(range(0,4))", diag_);
      }
    } catch (const ConfigError& e) {
      diag_.error(p, where(n) + e.what());
    }
  }

  void finish() {
    for (const auto& [k, v] : map_->entries())
      if (!seen_.count(k)) diag_.unknown_key(sub(k), v->loc().str());
  }

  template <typename S>
  void read_struct(const NodePtr& n, const std::string& path, S& s) {
    Reader r(n, path, diag_);
    s.visit(r);
    r.finish();
  }

 private:
  NodePtr take(const char* key) {
    seen_.insert(key);
    return map_->get(key);
  }
  std::string sub(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  NodePtr map_;
  std::string path_;
  Diagnostics& diag_;
  std::set<std::string> seen_;
};

// --- the printing visitor ------------------------------------------------------------------

NodePtr scalar_of(const std::string& s) { return Node::scalar(s, true); }
NodePtr to_node(bool v) { return Node::scalar(v ? "true" : "false"); }
NodePtr to_node(int64_t v) { return Node::scalar(std::to_string(v)); }
NodePtr to_node(int v) { return Node::scalar(std::to_string(v)); }
NodePtr to_node(double v) {
  if (std::isinf(v)) return Node::scalar(v > 0 ? ".inf" : "-.inf");
  return Node::scalar(fmt::format("{}", v));
}
NodePtr to_node(const std::string& v) { return scalar_of(v); }
NodePtr to_node(const NodePtr& v) { return v ? v : Node::null(); }
template <typename T>
NodePtr to_node(const std::optional<T>& v) {
  return v ? to_node(*v) : Node::null();
}
template <typename T>
NodePtr to_node(const std::vector<T>& v) {
  auto seq = Node::sequence();
  for (const auto& x : v) seq->items().push_back(to_node(x));
  return seq;
}
template <typename T>
NodePtr to_node(const Ordered<T>& v) {
  auto m = Node::map();
  for (const auto& [k, x] : v) m->set(k, to_node(x));
  return m;
}

class Writer {
 public:
  NodePtr out = Node::map();

  template <typename T>
  void operator()(const char* key, const T& field) {
    out->set(key, to_node(field));
  }
  void inert(const char*) {}
  template <typename S>
  void nested(const char* key, const S& s) {
    out->set(key, write(s));
  }
  template <typename S>
  void nested(const char* key, const std::optional<S>& s) {
    out->set(key, s ? write(*s) : Node::null());
  }
  template <typename S>
  void nested_map(const char* key, const Ordered<S>& v) {
    auto m = Node::map();
    for (const auto& [k, s] : v) m->set(k, write(s));
    out->set(key, m);
  }
  template <typename S>
  void nested_list(const char* key, const std::vector<S>& v) {
    auto seq = Node::sequence();
    for (const auto& s : v) seq->items().push_back(write(s));
    out->set(key, seq);
  }
  void device_mapping(const char* key, const std::optional<std::vector<int>>& ids) {
    out->set(key, ids ? to_node(*ids) : Node::null());
  }

  template <typename S>
  static NodePtr write(const S& s) {
    Writer w;
    const_cast<S&>(s).visit(w);  // visit is non-const because the reader fills fields
    return w.out;
  }
};

}  // namespace

bool read_bool(const NodePtr& node, const std::string& path, bool& out, Diagnostics& diag) {
  if (node->is_scalar()) {
    const std::string t = lower(node->text());
    if (t == "true" || t == "yes" || t == "on") {
      out = true;
      return true;
    }
    if (t == "false" || t == "no" || t == "off") {
      out = false;
      return true;
    }
  }
  type_error(node, path, "a boolean (true/false)", diag);
  return false;
}

bool read_int(const NodePtr& node, const std::string& path, int64_t& out, Diagnostics& diag) {
  if (node->is_scalar()) {
    const std::string& t = node->text();
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(t.c_str(), &end, 10);
    if (!t.empty() && end && *end == '\0' && errno == 0) {
      out = v;
      return true;
    }
    // `1.0e+9` for an integer field: accept when integral (YAML writers produce it).
    double d = 0;
    if (parse_double_text(t, d) && std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) {
      out = static_cast<int64_t>(d);
      return true;
    }
  }
  type_error(node, path, "an integer", diag);
  return false;
}

bool read_double(const NodePtr& node, const std::string& path, double& out, Diagnostics& diag) {
  if (node->is_scalar() && parse_double_text(node->text(), out)) return true;
  type_error(node, path, "a number", diag);
  return false;
}

void read_pipeline_config(const NodePtr& root, PipelineConfig& config, Diagnostics& diag) {
  Reader r(root, "", diag);
  config.visit(r);
  r.finish();
}

void read_worker_config(const NodePtr& node, const std::string& path, WorkerConfig& config, Diagnostics& diag) {
  Reader r(node, path, diag);
  config.visit(r);
  r.finish();
}

NodePtr write_pipeline_config(const PipelineConfig& config) { return Writer::write(config); }

}  // namespace roll::config
