#pragma once
// Block tables of the running sequences over a BlockAllocator (vLLM's KVCacheManager): which
// cache blocks hold each sequence's K/V, prefix-cache hits for new sequences, copy-on-write of a
// shared partial block, and the statistics tests and benchmarks read.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "roll/engine/block_allocator.h"

namespace roll::engine {

using SeqId = int64_t;

// A block to copy before the step that writes into `dst` (copy-on-write of a shared block).
struct BlockCopy {
  BlockId src = 0, dst = 0;
};

struct KvCacheStats {
  int64_t num_blocks = 0;
  int64_t free_blocks = 0;           // unowned (some still hold cached prefixes)
  int64_t cached_blocks = 0;         // full blocks findable by hash
  int64_t blocks_allocated = 0;      // blocks handed out since start (fresh or evicted)
  int64_t cow_copies = 0;            // shared partial blocks copied before a write
  int64_t evictions = 0;             // cached blocks reused for other contents
  int64_t prefix_query_tokens = 0;   // prompt tokens looked up in the prefix cache
  int64_t prefix_hit_tokens = 0;     // of which found cached
};

class KvCacheManager {
 public:
  KvCacheManager(int32_t num_blocks, int64_t block_size, bool enable_prefix_caching);

  int64_t block_size() const { return block_size_; }
  int32_t num_blocks() const { return alloc_.num_blocks(); }
  int32_t num_free_blocks() const { return alloc_.num_free(); }
  bool prefix_caching() const { return prefix_caching_; }

  // For a sequence that holds no blocks: takes the cached full blocks its tokens start with,
  // never covering the last token (its logits are needed). Returns the tokens they hold.
  int64_t take_cached_prefix(SeqId seq, std::span<const int32_t> tokens);
  // Room for K/V of tokens [num_computed, num_computed + n): new blocks, and a private copy of a
  // shared partial block about to be written (appended to `copies`). Returns false, changing
  // nothing, when the pool has too few free blocks.
  bool allocate_slots(SeqId seq, int64_t num_computed, int64_t n, std::vector<BlockCopy>& copies);
  // Tokens [0, num_computed) of `tokens` now hold K/V: their full blocks enter the prefix cache.
  void cache_computed(SeqId seq, std::span<const int32_t> tokens, int64_t num_computed);
  // `child` shares every block of `parent` (n samples of one prompt).
  void fork(SeqId parent, SeqId child);
  // Releases the sequence's blocks, last block first so that prompt heads stay cached longest.
  void free(SeqId seq);
  std::span<const BlockId> block_table(SeqId seq) const;
  int32_t refcount(BlockId b) const { return alloc_.refcount(b); }

  void reset_prefix_cache() { alloc_.reset_prefix_cache(); }
  void reset();  // every sequence forgotten, every block free
  KvCacheStats stats() const;
  void reset_stats();  // counters back to zero (after warm-up)

 private:
  struct SeqBlocks {
    std::vector<BlockId> table;
    std::vector<BlockHash> hashes;  // of the leading full blocks already cached/looked up
  };
  BlockAllocator alloc_;
  int64_t block_size_;
  bool prefix_caching_;
  std::unordered_map<SeqId, SeqBlocks> seqs_;
  int64_t blocks_allocated_ = 0, cow_copies_ = 0, query_tokens_ = 0, hit_tokens_ = 0;
};

}  // namespace roll::engine
