#include "roll/train/lr_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "roll/core/error.h"

namespace roll::train {

LrSchedule::LrSchedule(std::string type, double base_lr, int64_t total_steps, int64_t warmup_steps,
                       double warmup_ratio)
    : type_(std::move(type)), base_lr_(base_lr), total_(std::max<int64_t>(1, total_steps)) {
  if (type_ != "linear" && type_ != "cosine" && type_ != "constant" && type_ != "constant_with_warmup")
    throw ConfigError("lr_scheduler_type",
                      fmt::format("lr_scheduler_type '{}' is not supported (linear, cosine, constant, "
                                  "constant_with_warmup)",
                                  type_));
  if (warmup_ratio < 0 || warmup_ratio > 1)
    throw ConfigError("warmup_ratio", fmt::format("warmup_ratio {} must be in [0, 1]", warmup_ratio));
  warmup_ = warmup_steps > 0 ? warmup_steps : static_cast<int64_t>(std::ceil(total_ * warmup_ratio));
}

double LrSchedule::multiplier(int64_t step) const {
  const double s = static_cast<double>(step), w = static_cast<double>(warmup_), t = static_cast<double>(total_);
  if (type_ == "constant") return 1.0;
  if (step < warmup_) return s / std::max(1.0, w);
  if (type_ == "constant_with_warmup") return 1.0;
  if (type_ == "linear") return std::max(0.0, (t - s) / std::max(1.0, t - w));
  // cosine, num_cycles = 0.5: half a cosine from 1 down to 0 over the post-warmup steps.
  const double progress = (s - w) / std::max(1.0, t - w);
  return std::max(0.0, 0.5 * (1.0 + std::cos(M_PI * 0.5 * 2.0 * progress)));
}

}  // namespace roll::train
