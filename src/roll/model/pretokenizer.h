#pragma once
// Pre-tokenizers of HF tokenizers that byte-level BPE models use: Split (regex or literal, every
// SplitDelimiterBehavior, invert) and ByteLevel (add_prefix_space, optional GPT-2 regex), chained
// as a Sequence. Regexes run on PCRE2 (UTF + UCP, JIT); the PCRE2 types stay in the .cpp.
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace roll::model {

// A compiled PCRE2 pattern. Matching is thread-safe (per-thread match data and JIT stack).
class Regex {
 public:
  // `literal`: the pattern is a plain string (HF's Split {"String": ...}). Throws roll::Error
  // with PCRE2's message and the offset of the problem.
  explicit Regex(const std::string& pattern, bool literal = false);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends [start, end) of each non-empty match of well-formed UTF-8 `text`, left to right.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

enum class SplitBehavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

struct PreTokenizerStep {
  enum class Kind { split, byte_level } kind = Kind::split;
  // split
  std::shared_ptr<const Regex> regex;
  SplitBehavior behavior = SplitBehavior::isolated;
  bool invert = false;
  // byte_level (its GPT-2 regex, when use_regex, is held in `regex`)
  bool add_prefix_space = false;
};

// Pieces of one text. Views point into the caller's text or into `arena` (pieces that got a
// prefix space), so they stay valid while this object lives.
struct Pieces {
  std::vector<std::string_view> views;
  std::deque<std::string> arena;
  void clear() {
    views.clear();
    arena.clear();
  }
};

class PreTokenizer {
 public:
  PreTokenizer() = default;
  explicit PreTokenizer(std::vector<PreTokenizerStep> steps) : steps_(std::move(steps)) {}
  // Splits `text` (which must outlive `out`) and appends its pieces to out; empty pieces are dropped.
  void split(std::string_view text, Pieces& out) const;

 private:
  std::vector<PreTokenizerStep> steps_;
};

// The regex of GPT-2's ByteLevel pre-tokenizer (HF's use_regex: true).
const char* gpt2_split_pattern();

}  // namespace roll::model
