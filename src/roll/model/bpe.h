#pragma once
// Byte-level BPE model: merges a pre-token's bytes into token ids by merge rank, as HF's BPE
// model does (lowest rank first, leftmost on ties), with a thread-safe per-word cache.
// Works on raw bytes: in byte-level BPE each initial symbol is exactly one byte's token.
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <optional>
#include <vector>

namespace roll::model {

using TokenId = int32_t;

// Token string -> id over a table of token strings indexed by id ("" = no token there): a flat
// open-addressing table of ids, so a lookup touches the slot and the string, nothing else.
class TokenIndex {
 public:
  TokenIndex() = default;
  explicit TokenIndex(const std::vector<std::string>* tokens);
  std::optional<TokenId> find(std::string_view token) const;

 private:
  const std::vector<std::string>* tokens_ = nullptr;
  std::vector<TokenId> slots_;  // -1: empty
  size_t mask_ = 0;
};

struct BpeMerge {
  TokenId left, right, merged;
};

class BpeModel {
 public:
  struct Options {
    // HF's ignore_merges: a pre-token that is itself a vocabulary entry becomes that one token.
    bool ignore_merges = false;
    size_t cache_capacity = 1 << 16;   // entries; when full, new words are not cached (as HF)
    size_t max_cached_word_bytes = 256;
  };

  // byte_ids[b]: id of the token of byte b, or -1 (that byte is then dropped, as HF's BPE drops
  // characters it cannot map when there is no unk token). merges: in rank order (rank = index).
  // vocab: byte-level token string -> id, read only for ignore_merges; must outlive the model.
  BpeModel(const std::array<TokenId, 256>& byte_ids, const std::vector<BpeMerge>& merges, Options options,
           const TokenIndex* vocab);
  ~BpeModel();

  // Appends the ids of one pre-token (raw bytes).
  void encode(std::string_view word, std::vector<TokenId>& out) const;

  void clear_cache() const;
  size_t cache_entries() const;

 private:
  struct PairTable;
  struct Cache;
  void merge_word(std::string_view word, std::vector<TokenId>& out) const;

  std::array<TokenId, 256> byte_ids_;
  std::unique_ptr<PairTable> pairs_;
  std::unique_ptr<Cache> cache_;
  Options options_;
  const TokenIndex* vocab_;
};

}  // namespace roll::model
