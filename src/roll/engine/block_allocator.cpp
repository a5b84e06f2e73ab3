#include "roll/engine/block_allocator.h"

#include <algorithm>
#include <stdexcept>

#include "roll/core/rng.h"

namespace roll::engine {

BlockHash hash_block(BlockHash parent, std::span<const int32_t> tokens) {
  uint64_t h = splitmix64(parent ^ 0x6a09e667f3bcc908ull);
  for (int32_t t : tokens) h = splitmix64(h ^ static_cast<uint32_t>(t));
  return splitmix64(h ^ tokens.size());
}

BlockAllocator::BlockAllocator(int32_t num_blocks)
    : refcount_(num_blocks, 0),
      prev_(num_blocks, -1),
      next_(num_blocks, -1),
      in_free_(num_blocks, false),
      cached_(num_blocks, false),
      keys_(num_blocks) {
  reset();
}

void BlockAllocator::reset() {
  by_hash_.clear();
  head_ = tail_ = -1;
  num_free_ = 0;
  for (BlockId b = 0; b < num_blocks(); ++b) {
    refcount_[b] = 0;
    cached_[b] = false;
    keys_[b] = {};
    in_free_[b] = false;
    push_free_tail(b);
  }
}

void BlockAllocator::push_free_tail(BlockId b) {
  prev_[b] = tail_;
  next_[b] = -1;
  if (tail_ >= 0) next_[tail_] = b;
  else head_ = b;
  tail_ = b;
  in_free_[b] = true;
  ++num_free_;
}

void BlockAllocator::unlink_free(BlockId b) {
  if (prev_[b] >= 0) next_[prev_[b]] = next_[b];
  else head_ = next_[b];
  if (next_[b] >= 0) prev_[next_[b]] = prev_[b];
  else tail_ = prev_[b];
  prev_[b] = next_[b] = -1;
  in_free_[b] = false;
  --num_free_;
}

void BlockAllocator::uncache(BlockId b) {
  if (!cached_[b]) return;
  auto it = by_hash_.find(keys_[b].hash);
  if (it != by_hash_.end() && it->second == b) by_hash_.erase(it);
  cached_[b] = false;
  keys_[b] = {};
}

std::optional<BlockId> BlockAllocator::allocate() {
  if (head_ < 0) return std::nullopt;
  BlockId b = head_;
  unlink_free(b);
  if (cached_[b]) {
    uncache(b);
    ++evictions_;
  }
  refcount_[b] = 1;
  return b;
}

void BlockAllocator::incref(BlockId b) {
  if (refcount_[b]++ == 0) unlink_free(b);
}

void BlockAllocator::decref(BlockId b) {
  if (refcount_[b] <= 0) throw std::logic_error("BlockAllocator::decref of a free block");
  if (--refcount_[b] == 0) push_free_tail(b);
}

std::optional<BlockId> BlockAllocator::lookup(BlockHash hash, BlockHash parent, std::span<const int32_t> tokens) {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  const CacheKey& k = keys_[it->second];
  if (k.parent != parent || !std::equal(k.tokens.begin(), k.tokens.end(), tokens.begin(), tokens.end()))
    return std::nullopt;  // a 64-bit collision: treat as a miss rather than reuse wrong K/V
  incref(it->second);
  return it->second;
}

void BlockAllocator::cache_full_block(BlockId b, BlockHash hash, BlockHash parent, std::span<const int32_t> tokens) {
  if (cached_[b] || by_hash_.count(hash)) return;
  by_hash_.emplace(hash, b);
  cached_[b] = true;
  keys_[b] = CacheKey{hash, parent, std::vector<int32_t>(tokens.begin(), tokens.end())};
}

void BlockAllocator::reset_prefix_cache() {
  by_hash_.clear();
  for (BlockId b = 0; b < num_blocks(); ++b) {
    cached_[b] = false;
    keys_[b] = {};
  }
}

}  // namespace roll::engine
