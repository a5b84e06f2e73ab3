#include "roll/pipeline/rollout/replay_buffer.h"

#include <fmt/format.h>

#include <cmath>

#include "roll/core/error.h"

namespace roll::pipeline {

ReplayBuffer::ReplayBuffer(ReplayBufferOptions options)
    : o_(options), budget_(0, options.use_additional_prompts, options.max_additional_running_prompts) {
  if (!(o_.async_generation_ratio >= 0))
    throw ConfigError("async_generation_ratio",
                      fmt::format("async_generation_ratio must be >= 0, got {}", o_.async_generation_ratio));
}

int64_t ReplayBuffer::lookahead() const { return static_cast<int64_t>(std::ceil(o_.async_generation_ratio)); }

int64_t ReplayBuffer::current_step() const {
  if (!current_step_) throw Error("replay buffer: no step has begun");
  return *current_step_;
}

void ReplayBuffer::advance_step(int64_t step, int64_t batch_prompts) {
  if (current_step_ && step <= *current_step_)
    throw Error(fmt::format("replay buffer: step {} after step {}", step, *current_step_));
  if (batch_prompts < 0) throw Error(fmt::format("replay buffer: batch of {} prompts", batch_prompts));
  // The first step of an asynchronous run lets generation run ceil(B * ratio) prompts ahead.
  if (budget_.batch_size() == 0 && o_.async_generation_ratio > 0)
    budget_.grow(static_cast<int64_t>(std::ceil(static_cast<double>(batch_prompts) * o_.async_generation_ratio)));
  budget_.grow(batch_prompts);
  groups_[step];
  current_step_ = step;
}

std::optional<int64_t> ReplayBuffer::poll() {
  // Before the first step, or after a synchronous gc removed the current group, nothing starts.
  if (!current_step_ || !groups_.count(*current_step_)) return std::nullopt;
  const PromptSlot slot = budget_.poll();
  if (slot == PromptSlot::none) return std::nullopt;
  const int64_t id = next_id_++;
  running_[id] = {*current_step_, slot};
  ++groups_[*current_step_].running;
  return id;
}

void ReplayBuffer::commit(int64_t prompt_id) {
  auto it = running_.find(prompt_id);
  if (it == running_.end()) throw Error(fmt::format("replay buffer: commit of prompt {}, which is not running", prompt_id));
  const auto [step, slot] = it->second;
  running_.erase(it);
  budget_.commit(slot);
  Group& g = groups_.at(step);
  --g.running;
  g.finished.push_back(prompt_id);
  finished_step_[prompt_id] = step;
}

void ReplayBuffer::abort(int64_t prompt_id) {
  auto it = running_.find(prompt_id);
  if (it == running_.end()) return;  // already dropped by gc
  const auto [step, slot] = it->second;
  running_.erase(it);
  budget_.abort(slot);
  --groups_.at(step).running;
}

std::optional<std::vector<ReplayTaken>> ReplayBuffer::take_batch(int64_t batch_prompts, int64_t samples_per_prompt) {
  const int64_t current = current_step();
  const int64_t min_step = current - lookahead();
  const double frac = o_.async_generation_ratio - std::floor(o_.async_generation_ratio);
  const int64_t n = std::max<int64_t>(1, samples_per_prompt);
  // A dry pass decides how many each group gives; nothing changes unless the batch is complete.
  std::vector<std::pair<int64_t, int64_t>> plan;  // step, prompts
  int64_t collected = 0;
  for (const auto& [step, g] : groups_) {
    if (step < min_step) continue;
    const int64_t finished = static_cast<int64_t>(g.finished.size());
    int64_t want = batch_prompts - collected;
    if (step == current) {
      if (finished < want) return std::nullopt;
    } else {
      if (step == min_step && frac > 0) {
        // ROLL's share in samples (int(B * n * frac)), taken as whole prompts.
        const int64_t samples = static_cast<int64_t>(static_cast<double>(batch_prompts * n) * frac);
        want = std::min(want, (samples + n - 1) / n);
      }
      if (finished < want && g.running > 0) return std::nullopt;  // its running prompts come first
      want = std::min(want, finished);
    }
    if (want > 0) plan.emplace_back(step, want);
    collected += want;
    if (step == current || collected >= batch_prompts) break;
  }
  if (collected < batch_prompts) return std::nullopt;
  std::vector<ReplayTaken> out;
  for (const auto& [step, count] : plan) {
    Group& g = groups_.at(step);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t id = g.finished.front();
      g.finished.pop_front();
      finished_step_.erase(id);
      out.push_back({id, step});
    }
  }
  return out;
}

std::vector<int64_t> ReplayBuffer::gc() {
  std::vector<int64_t> aborted;
  if (!current_step_) return aborted;
  const int64_t max_gc_step = *current_step_ - lookahead();
  for (auto it = groups_.begin(); it != groups_.end() && it->first <= max_gc_step;) {
    for (int64_t id : it->second.finished) finished_step_.erase(id);
    it = groups_.erase(it);
  }
  for (auto it = running_.begin(); it != running_.end();) {
    if (it->second.first > max_gc_step) {
      ++it;
      continue;
    }
    budget_.abort(it->second.second);
    aborted.push_back(it->first);
    it = running_.erase(it);
  }
  return aborted;
}

std::optional<int64_t> ReplayBuffer::start_step_of(int64_t prompt_id) const {
  if (auto it = running_.find(prompt_id); it != running_.end()) return it->second.first;
  if (auto it = finished_step_.find(prompt_id); it != finished_step_.end()) return it->second;
  return std::nullopt;
}

int64_t ReplayBuffer::finished() const {
  int64_t total = 0;
  for (const auto& [step, g] : groups_) total += static_cast<int64_t>(g.finished.size());
  return total;
}

}  // namespace roll::pipeline
