#include "roll/pipeline/data/prompt_budget.h"

#include <fmt/format.h>

#include "roll/core/error.h"

namespace roll::pipeline {

PromptBudget::PromptBudget(int64_t batch_size, bool use_additional_prompts, int64_t max_additional_running_prompts)
    : batch_size_(batch_size), use_additional_(use_additional_prompts), max_additional_(max_additional_running_prompts) {
  if (batch_size < 0) throw Error(fmt::format("prompt budget: batch size {} < 0", batch_size));
  if (use_additional_prompts && max_additional_running_prompts < 0)
    throw ConfigError("max_additional_running_prompts",
                      fmt::format("max_additional_running_prompts must be >= 0, got {}", max_additional_running_prompts));
}

PromptSlot PromptBudget::poll() {
  if (running_ + completed_ < batch_size_) {
    ++running_;
    return PromptSlot::regular;
  }
  if (use_additional_ && running_extra_ < max_additional_) {
    ++running_extra_;
    return PromptSlot::extra;
  }
  return PromptSlot::none;
}

void PromptBudget::grow(int64_t prompts) {
  if (prompts < 0) throw Error(fmt::format("prompt budget: cannot grow by {} prompts", prompts));
  batch_size_ += prompts;
}

void PromptBudget::release(PromptSlot slot) {
  int64_t& count = slot == PromptSlot::regular ? running_ : running_extra_;
  if (slot == PromptSlot::none || count <= 0) throw Error("prompt budget: a prompt finished that never started");
  --count;
}

void PromptBudget::commit(PromptSlot slot) {
  release(slot);
  if (slot == PromptSlot::regular) ++completed_;
}

void PromptBudget::abort(PromptSlot slot) { release(slot); }

}  // namespace roll::pipeline
