// Block pool and block tables: reference counts, LRU eviction of cached free blocks, prefix-cache
// lookups keyed by the chained block hash, fork and copy-on-write of a shared partial block.
#include <gtest/gtest.h>

#include <numeric>

#include "roll/engine/block_allocator.h"
#include "roll/engine/kv_cache_manager.h"

using namespace roll;
using namespace roll::engine;

namespace {
std::vector<int32_t> iota_tokens(int n, int start = 0) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), start);
  return t;
}
}  // namespace

TEST(EngineKvCache, AllocatorHandsOutLeastRecentlyFreedFirst) {
  BlockAllocator a(3);
  auto b0 = *a.allocate(), b1 = *a.allocate(), b2 = *a.allocate();
  EXPECT_FALSE(a.allocate().has_value());
  EXPECT_EQ(a.num_free(), 0);
  a.decref(b1);
  a.decref(b0);
  a.decref(b2);
  EXPECT_EQ(*a.allocate(), b1);
  EXPECT_EQ(*a.allocate(), b0);
  EXPECT_EQ(*a.allocate(), b2);
}

TEST(EngineKvCache, CachedFreeBlockIsRevivedOrEvictedInLruOrder) {
  BlockAllocator a(2);
  auto toks = iota_tokens(4);
  const BlockHash h = hash_block(0, toks);
  auto b = *a.allocate();
  a.cache_full_block(b, h, 0, toks);
  a.decref(b);  // free but still cached
  EXPECT_EQ(a.num_free(), 2);
  auto hit = a.lookup(h, 0, toks);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(*hit, b);
  EXPECT_EQ(a.refcount(b), 1);
  EXPECT_EQ(a.num_free(), 1);
  EXPECT_FALSE(a.lookup(h, 1, toks).has_value()) << "different parent: a miss";
  a.decref(b);
  // Two allocations: the uncached block first (freed earlier), then the cached one is evicted.
  auto x = *a.allocate();
  EXPECT_NE(x, b);
  EXPECT_TRUE(a.is_cached(b));
  auto y = *a.allocate();
  EXPECT_EQ(y, b);
  EXPECT_FALSE(a.is_cached(b));
  EXPECT_EQ(a.evictions(), 1);
  EXPECT_FALSE(a.lookup(h, 0, toks).has_value());
}

TEST(EngineKvCache, PrefixHitsNeverCoverTheLastToken) {
  KvCacheManager kv(16, 4, true);
  auto toks = iota_tokens(12);
  std::vector<BlockCopy> copies;
  ASSERT_EQ(kv.take_cached_prefix(1, toks), 0);
  ASSERT_TRUE(kv.allocate_slots(1, 0, 12, copies));
  kv.cache_computed(1, toks, 12);
  EXPECT_EQ(kv.stats().cached_blocks, 3);
  // Same 12 tokens: only 8 are reused, the last block is recomputed for the last token's logits.
  EXPECT_EQ(kv.take_cached_prefix(2, toks), 8);
  auto longer = iota_tokens(14);
  EXPECT_EQ(kv.take_cached_prefix(3, longer), 12);
  auto diverging = iota_tokens(14);
  diverging[5] = 99;
  EXPECT_EQ(kv.take_cached_prefix(4, diverging), 4);
  EXPECT_EQ(kv.block_table(3)[0], kv.block_table(1)[0]);
  EXPECT_EQ(kv.refcount(kv.block_table(1)[0]), 4);
  kv.reset_prefix_cache();
  EXPECT_EQ(kv.take_cached_prefix(5, longer), 0);
}

TEST(EngineKvCache, ForkSharesBlocksAndCopiesThePartialOneOnWrite) {
  KvCacheManager kv(8, 4, false);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(kv.allocate_slots(1, 0, 6, copies));  // one full + one partial block
  kv.fork(1, 2);
  kv.fork(1, 3);
  const auto partial = kv.block_table(1)[1];
  EXPECT_EQ(kv.refcount(partial), 3);
  ASSERT_TRUE(kv.allocate_slots(2, 6, 1, copies));
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].src, partial);
  EXPECT_EQ(kv.block_table(2)[1], copies[0].dst);
  EXPECT_EQ(kv.block_table(2)[0], kv.block_table(1)[0]) << "the full block stays shared";
  ASSERT_TRUE(kv.allocate_slots(3, 6, 1, copies));
  EXPECT_EQ(copies.size(), 2u);
  ASSERT_TRUE(kv.allocate_slots(1, 6, 1, copies));
  EXPECT_EQ(copies.size(), 2u) << "the last owner writes in place";
  EXPECT_EQ(kv.stats().cow_copies, 2);
  // Out of blocks: nothing changes.
  KvCacheManager small(2, 4, false);
  EXPECT_TRUE(small.allocate_slots(1, 0, 8, copies));
  EXPECT_FALSE(small.allocate_slots(1, 8, 1, copies));
  EXPECT_EQ(small.block_table(1).size(), 2u);
  small.free(1);
  EXPECT_EQ(small.num_free_blocks(), 2);
}
