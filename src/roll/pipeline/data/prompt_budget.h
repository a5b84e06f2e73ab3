#pragma once
// How many prompts of one domain may run at once during a step at generate_opt_level 1 (ROLL's
// ReplayBuffer.poll/commit/abort, docs/pipelines.md, synchronous mode):
//   poll    a regular slot while running + completed < batch_size; else, with
//           is_use_additional_prompts, an extra slot while running_extra <
//           max_additional_running_prompts; else none (wait for a prompt to finish).
//   commit  the prompt passed the query filter: its slot is freed; a regular one counts as completed.
//   abort   filtered out or cut off: the slot is freed, nothing is completed, so the next poll
//           starts a replacement prompt (dynamic sampling).
// Quirk 10 (docs/compat.md) is fixed: ROLL compares running + running_extra with the extra limit, so
// the extras it allows shrink as regular prompts run; here the limit counts extra prompts only.
#include <cstdint>

namespace roll::pipeline {

enum class PromptSlot { none, regular, extra };

class PromptBudget {
 public:
  PromptBudget(int64_t batch_size, bool use_additional_prompts, int64_t max_additional_running_prompts);

  PromptSlot poll();
  // More regular slots (the asynchronous ReplayBuffer's budget grows by a batch every step).
  void grow(int64_t prompts);
  void commit(PromptSlot slot);
  void abort(PromptSlot slot);

  int64_t running() const { return running_; }
  int64_t running_extra() const { return running_extra_; }
  int64_t completed() const { return completed_; }
  int64_t batch_size() const { return batch_size_; }

 private:
  void release(PromptSlot slot);

  int64_t batch_size_;
  bool use_additional_;
  int64_t max_additional_;
  int64_t running_ = 0, running_extra_ = 0, completed_ = 0;
};

}  // namespace roll::pipeline
