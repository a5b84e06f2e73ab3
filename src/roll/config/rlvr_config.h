#pragma once
// ROLL's RLVRConfig: templates, reward domains, validation and the RLVR-only loss and mask keys
// (docs/config.md).
#include <cstdint>
#include <optional>
#include <string>

#include "roll/config/ordered.h"
#include "roll/config/reward_config.h"
#include "roll/config/worker_config.h"

namespace roll::config {

struct RLVRConfig {
  std::optional<std::string> global_template;
  Ordered<std::string> tag_to_template;
  int64_t num_return_sequences_in_group = 1;
  std::optional<std::string> save_logging_board_dir;
  std::optional<WorkerConfig> validation;
  Ordered<RewardConfig> rewards;
  std::optional<WorkerConfig> reward_model;
  bool difficulty_loss_weight = false;
  bool length_loss_weight = false;
  double rl_loss_coef = 1.0;
  std::string importance_sampling = "token";
  bool max_len_mask = false;
  bool difficulty_mask = false;
  double difficulty_low_threshold = 0.0;
  double difficulty_high_threshold = 1.0;
  bool error_max_len_clip = false;
  int64_t error_max_len_threshold = 9999999999;

  template <typename V>
  void visit(V& v) {
    v("global_template", global_template);
    v("tag_to_template", tag_to_template);
    v("num_return_sequences_in_group", num_return_sequences_in_group);
    v("save_logging_board_dir", save_logging_board_dir);
    v.nested("validation", validation);
    v.nested_map("rewards", rewards);
    v.nested("reward_model", reward_model);
    v("difficulty_loss_weight", difficulty_loss_weight);
    v("length_loss_weight", length_loss_weight);
    v("rl_loss_coef", rl_loss_coef);
    v("importance_sampling", importance_sampling);
    v("max_len_mask", max_len_mask);
    v("difficulty_mask", difficulty_mask);
    v("difficulty_low_threshold", difficulty_low_threshold);
    v("difficulty_high_threshold", difficulty_high_threshold);
    v("error_max_len_clip", error_max_len_clip);
    v("error_max_len_threshold", error_max_len_threshold);
    for (const char* k : {"dataset_filter", "postive_loss_coef", "use_topr_neg_loss_coef", "use_policy_loss_type",
                          "use_topr_loss", "val_greedy", "val_n_sample", "mask_type", "balance_length",
                          "minibatch_data_iter_num"})
      v.inert(k);
  }
};

}  // namespace roll::config
