#pragma once
// Hugging Face LR schedules (transformers.get_scheduler): the multiplier of the base LR after
// `step` scheduler steps. The first optimizer step uses step 0 (so with warmup it runs at LR 0,
// exactly as HF does).
#include <cstdint>
#include <string>

namespace roll::train {

class LrSchedule {
 public:
  // type: linear | cosine | constant | constant_with_warmup (others: roll::Error naming them).
  // warmup = warmup_steps if > 0, else ceil(total_steps * warmup_ratio) (docs/config.md).
  LrSchedule(std::string type, double base_lr, int64_t total_steps, int64_t warmup_steps, double warmup_ratio);

  double multiplier(int64_t step) const;
  double lr(int64_t step) const { return base_lr_ * multiplier(step); }
  int64_t warmup_steps() const { return warmup_; }
  int64_t total_steps() const { return total_; }
  const std::string& type() const { return type_; }

 private:
  std::string type_;
  double base_lr_;
  int64_t total_, warmup_;
};

}  // namespace roll::train
