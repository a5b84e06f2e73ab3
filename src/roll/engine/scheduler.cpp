#include "roll/engine/scheduler.h"

#include <algorithm>
#include <span>

namespace roll::engine {

Scheduler::Scheduler(SchedulerConfig config, KvCacheManager& kv) : config_(config), kv_(kv) {}

void Scheduler::add(Sequence* seq) { waiting_.push_back(seq); }

void Scheduler::add_forked(Sequence* parent, Sequence* child) {
  auto it = std::find(running_.begin(), running_.end(), parent);
  running_.insert(it == running_.end() ? running_.end() : it + 1, child);
}

void Scheduler::preempt(Sequence* seq) {
  kv_.free(seq->id);
  seq->num_computed = 0;
  waiting_.push_front(seq);
  ++preemptions_;
}

void Scheduler::preempt_all() {
  // Reverse order so that the oldest ends up first in the waiting queue.
  for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
    preempt(*it);
    --preemptions_;  // not a capacity preemption
  }
  running_.clear();
}

void Scheduler::remove(Sequence* seq) {
  if (auto it = std::find(running_.begin(), running_.end(), seq); it != running_.end()) running_.erase(it);
  if (auto it = std::find(waiting_.begin(), waiting_.end(), seq); it != waiting_.end()) waiting_.erase(it);
  kv_.free(seq->id);
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  int64_t budget = config_.max_num_batched_tokens;
  bool preempted = false;

  // Running sequences: a decode token each, or the next chunk of a prompt being prefilled.
  size_t i = 0;
  while (i < running_.size() && budget > 0) {
    Sequence* seq = running_[i];
    const int64_t n = std::min(seq->num_tokens() - seq->num_computed, budget);
    bool self_preempted = false;
    while (!kv_.allocate_slots(seq->id, seq->num_computed, n, out.copies)) {
      Sequence* victim = running_.back();
      running_.pop_back();
      preempt(victim);
      ++out.num_preempted;
      preempted = true;
      if (victim == seq) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;
    out.chunks.push_back({seq, seq->num_computed, n});
    budget -= n;
    ++i;
  }

  // Waiting sequences, oldest first, unless this step had to preempt (no room to grow).
  while (!preempted && !waiting_.empty() && budget > 0 &&
         static_cast<int64_t>(running_.size()) < config_.max_num_seqs) {
    Sequence* seq = waiting_.front();
    // A prompt that forks into n samples needs room for all of them (unless nothing runs).
    if (!running_.empty() && static_cast<int64_t>(running_.size()) + seq->fork_width > config_.max_num_seqs) break;
    if (seq->num_computed == 0) {
      seq->num_computed = kv_.take_cached_prefix(seq->id, std::span<const int32_t>(seq->tokens));
      seq->num_cached = seq->num_computed;
    }
    const int64_t n = std::min(seq->num_tokens() - seq->num_computed, budget);
    if (!kv_.allocate_slots(seq->id, seq->num_computed, n, out.copies)) {
      kv_.free(seq->id);  // give back the prefix hits; they stay cached
      seq->num_computed = 0;
      break;
    }
    waiting_.pop_front();
    running_.push_back(seq);
    out.chunks.push_back({seq, seq->num_computed, n});
    budget -= n;
  }

  for (const auto& c : out.chunks) out.num_tokens += c.num_tokens;
  return out;
}

}  // namespace roll::engine
