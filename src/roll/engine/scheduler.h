#pragma once
// Continuous batching (vLLM V1's scheduler): every step fills a token budget, running sequences
// first (one decode token each, or the next chunk of a long prompt), then waiting ones in
// arrival order. When blocks run out the most recently admitted running sequence is preempted:
// its blocks are freed and it waits to be recomputed (prompt + tokens so far), which keeps the
// oldest requests progressing.
#include <cstdint>
#include <deque>
#include <vector>

#include "roll/engine/kv_cache_manager.h"
#include "roll/engine/sequence.h"

namespace roll::engine {

struct SchedulerConfig {
  int64_t max_num_batched_tokens = 8192;  // tokens per step (prompt chunks + decodes)
  int64_t max_num_seqs = 256;             // sequences running at once
};

// `num_tokens` tokens of `seq` from position `start`; the step samples from the last one when
// it is the sequence's last token.
struct ScheduledChunk {
  Sequence* seq = nullptr;
  int64_t start = 0;
  int64_t num_tokens = 0;
  bool samples() const { return start + num_tokens == seq->num_tokens(); }
};

struct SchedulerOutput {
  std::vector<ScheduledChunk> chunks;
  std::vector<BlockCopy> copies;  // copy-on-write, to run before the forward
  int64_t num_tokens = 0;
  int64_t num_preempted = 0;
  bool empty() const { return chunks.empty(); }
};

class Scheduler {
 public:
  Scheduler(SchedulerConfig config, KvCacheManager& kv);

  void add(Sequence* seq);                          // tail of the waiting queue
  void add_forked(Sequence* parent, Sequence* child);  // a running sibling, right after its parent
  SchedulerOutput schedule();
  // Removes a sequence (finished or aborted) from the queues and frees its blocks.
  void remove(Sequence* seq);
  // Every running sequence back to the waiting queue's head, blocks freed (weights changed,
  // or the cache is released): they are recomputed when stepping resumes.
  void preempt_all();

  size_t num_waiting() const { return waiting_.size(); }
  size_t num_running() const { return running_.size(); }
  bool idle() const { return waiting_.empty() && running_.empty(); }
  int64_t num_preemptions() const { return preemptions_; }
  const SchedulerConfig& config() const { return config_; }

 private:
  void preempt(Sequence* seq);

  SchedulerConfig config_;
  KvCacheManager& kv_;
  std::deque<Sequence*> waiting_;
  std::vector<Sequence*> running_;  // admission order: the back is preempted first
  int64_t preemptions_ = 0;
};

}  // namespace roll::engine
