#pragma once
// ROLL's ReplayBuffer for asynchronous RLVR generation (docs/pipelines.md, "Asynchronous
// generation"): which prompts may start, which step each belongs to, and which finished prompts
// make up a step's batch. Prompts only: the samples stay with the caller, keyed by prompt id.
//   advance_step(s, B)  step s begins: the budget grows by B prompts; the first step with ratio > 0
//                       starts at ceil(B * ratio), so generation runs that far ahead of training.
//   poll                a new prompt id bound to the current step, or nullopt while the budget is
//                       used up (is_use_additional_prompts allows up to max_additional_running_prompts
//                       more, as in PromptBudget).
//   commit / abort      the prompt passed the query filter (its samples are ready) / it was dropped
//                       (its slot refills with a new prompt; nothing counts as completed).
//   take_batch(B, n)    the step's B prompts, oldest group first from min_step = current -
//                       ceil(ratio) on; with a fractional ratio the min_step group gives only its
//                       share (whole prompts until int(B * n * frac(ratio)) samples); an older group
//                       with prompts still running is waited for; nullopt until enough are ready.
//   gc                  before a model update: groups of steps <= current - ceil(ratio) are dropped,
//                       finished samples included; their running prompts are returned to be aborted.
// Not thread-safe: one scheduler thread owns it.
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "roll/pipeline/data/prompt_budget.h"

namespace roll::pipeline {

struct ReplayBufferOptions {
  double async_generation_ratio = 0;
  bool use_additional_prompts = false;
  int64_t max_additional_running_prompts = 0;
};

struct ReplayTaken {
  int64_t prompt_id = 0;
  int64_t start_step = 0;  // the step current when the prompt started (its sampling_start_step)
};

class ReplayBuffer {
 public:
  explicit ReplayBuffer(ReplayBufferOptions options);

  void advance_step(int64_t step, int64_t batch_prompts);
  std::optional<int64_t> poll();
  void commit(int64_t prompt_id);
  void abort(int64_t prompt_id);
  std::optional<std::vector<ReplayTaken>> take_batch(int64_t batch_prompts, int64_t samples_per_prompt);
  std::vector<int64_t> gc();

  bool started() const { return current_step_.has_value(); }
  int64_t current_step() const;
  // The step prompt `prompt_id` (running or finished, not yet taken) belongs to; nullopt if unknown.
  std::optional<int64_t> start_step_of(int64_t prompt_id) const;
  int64_t running() const { return budget_.running() + budget_.running_extra(); }
  int64_t finished() const;  // committed and not yet taken, over every group
  int64_t groups() const { return static_cast<int64_t>(groups_.size()); }
  int64_t used_prompts() const { return next_id_; }

 private:
  struct Group {
    int64_t running = 0;
    std::deque<int64_t> finished;  // commit order
  };
  int64_t lookahead() const;  // ceil(ratio)

  ReplayBufferOptions o_;
  PromptBudget budget_;
  std::optional<int64_t> current_step_;
  std::map<int64_t, Group> groups_;
  std::map<int64_t, std::pair<int64_t, PromptSlot>> running_;  // prompt id -> start step, slot
  std::map<int64_t, int64_t> finished_step_;                   // prompt id -> start step
  int64_t next_id_ = 0;
};

}  // namespace roll::pipeline
