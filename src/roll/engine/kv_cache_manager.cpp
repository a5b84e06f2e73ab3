#include "roll/engine/kv_cache_manager.h"

#include <stdexcept>

namespace roll::engine {

KvCacheManager::KvCacheManager(int32_t num_blocks, int64_t block_size, bool enable_prefix_caching)
    : alloc_(num_blocks), block_size_(block_size), prefix_caching_(enable_prefix_caching) {
  if (block_size <= 0) throw std::invalid_argument("block_size must be positive");
}

int64_t KvCacheManager::take_cached_prefix(SeqId seq, std::span<const int32_t> tokens) {
  SeqBlocks& s = seqs_[seq];
  if (!s.table.empty()) throw std::logic_error("take_cached_prefix on a sequence that holds blocks");
  if (!prefix_caching_) return 0;
  query_tokens_ += static_cast<int64_t>(tokens.size());
  const int64_t full = tokens.empty() ? 0 : (static_cast<int64_t>(tokens.size()) - 1) / block_size_;
  BlockHash parent = 0;
  for (int64_t i = 0; i < full; ++i) {
    auto blk = tokens.subspan(i * block_size_, block_size_);
    const BlockHash h = hash_block(parent, blk);
    auto hit = alloc_.lookup(h, parent, blk);
    if (!hit) break;
    s.table.push_back(*hit);
    s.hashes.push_back(h);
    parent = h;
  }
  const int64_t n = static_cast<int64_t>(s.table.size()) * block_size_;
  hit_tokens_ += n;
  return n;
}

bool KvCacheManager::allocate_slots(SeqId seq, int64_t num_computed, int64_t n, std::vector<BlockCopy>& copies) {
  SeqBlocks& s = seqs_[seq];
  const int64_t have = static_cast<int64_t>(s.table.size());
  const int64_t need_total = (num_computed + n + block_size_ - 1) / block_size_;
  int64_t fresh = std::max<int64_t>(0, need_total - have);
  // The block the first new token lands in, when it already exists and others share it.
  const int64_t first = num_computed / block_size_;
  const bool cow = n > 0 && num_computed % block_size_ != 0 && first < have && alloc_.refcount(s.table[first]) > 1;
  if (fresh + (cow ? 1 : 0) > alloc_.num_free()) return false;
  if (cow) {
    const BlockId copy = *alloc_.allocate();
    ++blocks_allocated_;
    ++cow_copies_;
    copies.push_back({s.table[first], copy});
    alloc_.decref(s.table[first]);
    s.table[first] = copy;
  }
  for (; fresh > 0; --fresh) {
    s.table.push_back(*alloc_.allocate());
    ++blocks_allocated_;
  }
  return true;
}

void KvCacheManager::cache_computed(SeqId seq, std::span<const int32_t> tokens, int64_t num_computed) {
  if (!prefix_caching_) return;
  SeqBlocks& s = seqs_.at(seq);
  const int64_t full = std::min<int64_t>(num_computed / block_size_, static_cast<int64_t>(s.table.size()));
  for (int64_t i = static_cast<int64_t>(s.hashes.size()); i < full; ++i) {
    const BlockHash parent = i == 0 ? 0 : s.hashes[i - 1];
    auto blk = tokens.subspan(i * block_size_, block_size_);
    const BlockHash h = hash_block(parent, blk);
    alloc_.cache_full_block(s.table[i], h, parent, blk);
    s.hashes.push_back(h);
  }
}

void KvCacheManager::fork(SeqId parent, SeqId child) {
  const SeqBlocks& p = seqs_.at(parent);
  SeqBlocks& c = seqs_[child];
  if (!c.table.empty()) throw std::logic_error("fork into a sequence that holds blocks");
  c = p;
  for (BlockId b : c.table) alloc_.incref(b);
}

void KvCacheManager::free(SeqId seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  for (auto b = it->second.table.rbegin(); b != it->second.table.rend(); ++b) alloc_.decref(*b);
  seqs_.erase(it);
}

std::span<const BlockId> KvCacheManager::block_table(SeqId seq) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return {};
  return it->second.table;
}

void KvCacheManager::reset() {
  seqs_.clear();
  alloc_.reset();
}

void KvCacheManager::reset_stats() {
  blocks_allocated_ = cow_copies_ = query_tokens_ = hit_tokens_ = 0;
  alloc_.reset_evictions();
}

KvCacheStats KvCacheManager::stats() const {
  KvCacheStats st;
  st.num_blocks = alloc_.num_blocks();
  st.free_blocks = alloc_.num_free();
  st.cached_blocks = alloc_.num_cached();
  st.blocks_allocated = blocks_allocated_;
  st.cow_copies = cow_copies_;
  st.evictions = alloc_.evictions();
  st.prefix_query_tokens = query_tokens_;
  st.prefix_hit_tokens = hit_tokens_;
  return st;
}

}  // namespace roll::engine
