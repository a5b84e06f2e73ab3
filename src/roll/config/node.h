#pragma once
// The config tree: YAML as we read it, before typing. Every node remembers the file and line
// it came from so that errors can name them. Maps keep their key order (YAML and Hydra do).
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace roll::config {

struct SourceLoc {
  std::string file;  // empty for values from the command line or derived values
  int line = 0;      // 1-based; 0 when unknown
  std::string str() const;  // "file:line", "<command line>" or ""
};

class Node;
using NodePtr = std::shared_ptr<Node>;

class Node {
 public:
  enum class Kind { Null, Scalar, Sequence, Map };

  static NodePtr null(SourceLoc loc = {});
  static NodePtr scalar(std::string text, bool quoted = false, SourceLoc loc = {});
  static NodePtr sequence(SourceLoc loc = {});
  static NodePtr map(SourceLoc loc = {});

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::Null; }
  bool is_scalar() const { return kind_ == Kind::Scalar; }
  bool is_sequence() const { return kind_ == Kind::Sequence; }
  bool is_map() const { return kind_ == Kind::Map; }
  const char* kind_name() const;

  const SourceLoc& loc() const { return loc_; }
  void set_loc(SourceLoc loc) { loc_ = std::move(loc); }

  // Scalar: the source text; `quoted` scalars are always strings (YAML '1' is "1", not 1).
  const std::string& text() const { return text_; }
  bool quoted() const { return quoted_; }

  // Sequence.
  std::vector<NodePtr>& items() { return items_; }
  const std::vector<NodePtr>& items() const { return items_; }

  // Map (ordered).
  std::vector<std::pair<std::string, NodePtr>>& entries() { return entries_; }
  const std::vector<std::pair<std::string, NodePtr>>& entries() const { return entries_; }
  NodePtr get(const std::string& key) const;  // nullptr when absent
  bool has(const std::string& key) const { return get(key) != nullptr; }
  void set(const std::string& key, NodePtr value);  // replaces in place or appends
  bool erase(const std::string& key);

  NodePtr clone() const;  // deep copy

 private:
  Kind kind_ = Kind::Null;
  std::string text_;
  bool quoted_ = false;
  std::vector<NodePtr> items_;
  std::vector<std::pair<std::string, NodePtr>> entries_;
  SourceLoc loc_;
};

// Hydra/OmegaConf merge: maps merge key by key (overlay wins, recursively); anything else is
// replaced by the overlay. Returns a new tree; inputs are not modified.
NodePtr merge(const NodePtr& base, const NodePtr& overlay);

// Dotted path helpers ("actor_train.model_args.dtype"; list items by index "a.0.b").
std::vector<std::string> split_path(const std::string& dotted);
std::string join_path(const std::vector<std::string>& parts, size_t n = std::string::npos);

// YAML text <-> tree.
NodePtr load_yaml_file(const std::string& path);                              // throws ConfigError naming the file/line
NodePtr parse_yaml_text(const std::string& text, const SourceLoc& origin);  // e.g. an override value
std::string to_yaml(const NodePtr& node);

}  // namespace roll::config
