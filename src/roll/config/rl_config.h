#pragma once
// The RL algorithm's nested blocks: `train_infer_correction`, `overlong_reward` and
// `reward_normalization` (docs/config.md, docs/rl.md). ROLL's defaults are written here only; the rl/
// parameter structs are filled from these (workers/loss_params_from_config.cpp).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace roll::config {

struct IsWeightConfig {
  bool enabled = false;
  std::string weight_type = "token";  // token | geometric | sequence | segment
  double upper_bound = 1.2;
  bool detach = true;

  template <typename V>
  void visit(V& v) {
    v("enabled", enabled);
    v("weight_type", weight_type);
    v("upper_bound", upper_bound);
    v("detach", detach);
  }
};

struct TrainInferFilterConfig {
  bool enabled = false;
  std::string agg_type = "token";
  bool ratio_enabled = true;
  double ratio_low = 0.8;
  double ratio_high = 1.2;
  bool diff_enabled = false;
  double diff_low = -0.2;
  double diff_high = 0.2;

  template <typename V>
  void visit(V& v) {
    v("enabled", enabled);
    v("agg_type", agg_type);
    v("ratio_enabled", ratio_enabled);
    v("ratio_low", ratio_low);
    v("ratio_high", ratio_high);
    v("diff_enabled", diff_enabled);
    v("diff_low", diff_low);
    v("diff_high", diff_high);
  }
};

struct TrainInferCorrection {
  IsWeightConfig is_weight;
  std::vector<TrainInferFilterConfig> filters;

  template <typename V>
  void visit(V& v) {
    v.nested("is_weight", is_weight);
    v.nested_list("filters", filters);
  }
};

struct OverlongRewardConfig {  // DAPO overlong reward shaping: a rollcpp extension
  bool enable = false;
  int64_t buffer_len = 0;
  double penalty_factor = 1.0;

  template <typename V>
  void visit(V& v) {
    v("enable", enable);
    v("buffer_len", buffer_len);
    v("penalty_factor", penalty_factor);
  }
};

struct RewardNormalizationConfig {
  std::string grouping = "batch";
  std::string method = "identity";  // identity | mean | mean_std | asym_clip
  std::optional<std::string> norm_mean_type;
  std::optional<std::string> norm_std_type;
  std::optional<double> global_scale_factor;
  std::optional<double> global_shift_value;

  template <typename V>
  void visit(V& v) {
    v("grouping", grouping);
    v("method", method);
    v("norm_mean_type", norm_mean_type);
    v("norm_std_type", norm_std_type);
    v("global_scale_factor", global_scale_factor);
    v("global_shift_value", global_shift_value);
  }
};

}  // namespace roll::config
