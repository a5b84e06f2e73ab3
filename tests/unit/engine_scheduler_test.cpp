// Continuous batching decisions on plain sequences (no model): token budget and chunked prefill,
// max_num_seqs, preemption of the most recently admitted sequence and its recomputation.
#include <gtest/gtest.h>

#include <memory>

#include "roll/engine/scheduler.h"

using namespace roll;
using namespace roll::engine;

namespace {

struct Pool {
  std::vector<std::unique_ptr<Sequence>> seqs;
  Sequence* make(int64_t prompt_len, int64_t first_token = 0) {
    auto s = std::make_unique<Sequence>();
    s->id = static_cast<SeqId>(seqs.size());
    for (int64_t i = 0; i < prompt_len; ++i) s->tokens.push_back(static_cast<int32_t>(first_token + i));
    s->prompt_len = prompt_len;
    seqs.push_back(std::move(s));
    return seqs.back().get();
  }
};

// What the engine does after a step: computed tokens advance, sampling rows get a new token.
void complete(const SchedulerOutput& out) {
  for (const auto& c : out.chunks) {
    const bool sampled = c.samples();
    c.seq->num_computed += c.num_tokens;
    if (sampled) c.seq->tokens.push_back(7);
  }
}

}  // namespace

TEST(EngineScheduler, ChunkedPrefillUnderTheTokenBudget) {
  KvCacheManager kv(64, 4, false);
  Scheduler s({10, 8}, kv);
  Pool p;
  Sequence* a = p.make(23);
  Sequence* b = p.make(3);
  s.add(a);
  s.add(b);
  auto o1 = s.schedule();
  ASSERT_EQ(o1.chunks.size(), 1u);
  EXPECT_EQ(o1.chunks[0].num_tokens, 10);
  EXPECT_FALSE(o1.chunks[0].samples());
  complete(o1);
  auto o2 = s.schedule();
  ASSERT_EQ(o2.chunks.size(), 1u);
  EXPECT_EQ(o2.chunks[0].start, 10);
  complete(o2);
  auto o3 = s.schedule();  // 3 left of a, then b's 3 prompt tokens
  ASSERT_EQ(o3.chunks.size(), 2u);
  EXPECT_EQ(o3.chunks[0].num_tokens, 3);
  EXPECT_TRUE(o3.chunks[0].samples());
  EXPECT_EQ(o3.chunks[1].seq, b);
  EXPECT_EQ(o3.num_tokens, 6);
  complete(o3);
  auto o4 = s.schedule();  // two decodes
  ASSERT_EQ(o4.chunks.size(), 2u);
  EXPECT_EQ(o4.num_tokens, 2);
}

TEST(EngineScheduler, MaxNumSeqsLimitsAdmission) {
  KvCacheManager kv(64, 4, false);
  Scheduler s({100, 2}, kv);
  Pool p;
  for (int i = 0; i < 3; ++i) s.add(p.make(2));
  auto o = s.schedule();
  EXPECT_EQ(o.chunks.size(), 2u);
  EXPECT_EQ(s.num_waiting(), 1u);
  // A prompt that forks into n = 2 waits until two seats are free.
  Scheduler t({100, 3}, kv);
  Sequence* one = p.make(2);
  Sequence* wide = p.make(2);
  wide->fork_width = 3;
  t.add(one);
  t.add(wide);
  EXPECT_EQ(t.schedule().chunks.size(), 1u);
}

TEST(EngineScheduler, PreemptsTheNewestAndRecomputesIt) {
  KvCacheManager kv(4, 4, false);  // 16 tokens in all
  Scheduler s({100, 8}, kv);
  Pool p;
  Sequence* a = p.make(7);
  Sequence* b = p.make(7, 100);
  s.add(a);
  s.add(b);
  auto o = s.schedule();
  ASSERT_EQ(o.chunks.size(), 2u);  // 2 blocks each: the cache is full
  complete(o);
  // a's 8th token still fits its 2nd block; b's 8th too. The 9th of a needs a block: b goes.
  complete(s.schedule());
  auto o3 = s.schedule();
  EXPECT_EQ(o3.num_preempted, 1);
  ASSERT_EQ(o3.chunks.size(), 1u);
  EXPECT_EQ(o3.chunks[0].seq, a);
  EXPECT_EQ(b->num_computed, 0);
  EXPECT_EQ(s.num_waiting(), 1u);
  complete(o3);
  s.remove(a);  // a finishes: b is recomputed from scratch, prompt and generated tokens
  auto o4 = s.schedule();
  ASSERT_EQ(o4.chunks.size(), 1u);
  EXPECT_EQ(o4.chunks[0].seq, b);
  EXPECT_EQ(o4.chunks[0].start, 0);
  EXPECT_EQ(o4.chunks[0].num_tokens, b->num_tokens());
  EXPECT_EQ(s.num_preemptions(), 1);
}

TEST(EngineScheduler, PrefixHitsSkipComputedTokens) {
  KvCacheManager kv(16, 4, true);
  Scheduler s({100, 8}, kv);
  Pool p;
  Sequence* a = p.make(10);
  s.add(a);
  auto o = s.schedule();
  complete(o);
  kv.cache_computed(a->id, a->tokens, a->num_computed);
  Sequence* b = p.make(10);  // same tokens 0..9
  s.add(b);
  auto o2 = s.schedule();
  ASSERT_EQ(o2.chunks.size(), 2u);
  EXPECT_EQ(o2.chunks[1].seq, b);
  EXPECT_EQ(o2.chunks[1].start, 8);
  EXPECT_EQ(o2.chunks[1].num_tokens, 2);
  EXPECT_EQ(b->num_cached, 8);
}
