#pragma once
// The pool of KV-cache blocks (vLLM V1's BlockPool): reference counts, a free queue ordered by
// release time, and the prefix cache that maps a block's hash to a block holding those tokens.
// A freed block keeps its cached contents until it is handed out again, so the free queue is
// also the LRU eviction order: allocation takes the least recently released block.
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace roll::engine {

using BlockId = int32_t;
using BlockHash = uint64_t;

// Hash of a full block: its tokens chained with the hash of every block before it, so equal
// hashes mean equal prefixes (the stored tokens and parent hash are compared on lookup too).
BlockHash hash_block(BlockHash parent, std::span<const int32_t> tokens);

class BlockAllocator {
 public:
  explicit BlockAllocator(int32_t num_blocks);

  int32_t num_blocks() const { return static_cast<int32_t>(refcount_.size()); }
  // Blocks with no owner (cached or not): what allocate() can still hand out.
  int32_t num_free() const { return num_free_; }
  int32_t refcount(BlockId b) const { return refcount_[b]; }

  // Takes the least recently released free block (refcount 1), dropping its prefix-cache entry.
  std::optional<BlockId> allocate();
  void incref(BlockId b);
  // At zero the block goes to the tail of the free queue, still findable in the prefix cache.
  void decref(BlockId b);

  // A cached block with these contents, taken (incref) on a hit; nullopt on a miss.
  std::optional<BlockId> lookup(BlockHash hash, BlockHash parent, std::span<const int32_t> tokens);
  // Records a block that has just been filled; keeps the older block when the hash is known.
  void cache_full_block(BlockId b, BlockHash hash, BlockHash parent, std::span<const int32_t> tokens);
  bool is_cached(BlockId b) const { return cached_[b]; }
  int64_t num_cached() const { return static_cast<int64_t>(by_hash_.size()); }
  int64_t evictions() const { return evictions_; }
  void reset_evictions() { evictions_ = 0; }

  // Forgets every cached hash (weights changed: cached K/V is stale). Owned blocks stay owned.
  void reset_prefix_cache();
  // Every block free and uncached (sleep/wake).
  void reset();

 private:
  void push_free_tail(BlockId b);
  void unlink_free(BlockId b);
  void uncache(BlockId b);

  struct CacheKey {
    BlockHash hash = 0, parent = 0;
    std::vector<int32_t> tokens;
  };
  std::vector<int32_t> refcount_;
  std::vector<BlockId> prev_, next_;  // free queue links (-1: none)
  std::vector<bool> in_free_, cached_;
  std::vector<CacheKey> keys_;
  BlockId head_ = -1, tail_ = -1;
  int32_t num_free_ = 0;
  int64_t evictions_ = 0;
  std::unordered_map<BlockHash, BlockId> by_hash_;
};

}  // namespace roll::engine
