#pragma once
// `<worker>.training_args` (ROLL's TrainingArguments, docs/config.md).
#include <cstdint>
#include <optional>
#include <string>

#include "roll/config/node.h"

namespace roll::config {

struct TrainingArguments {
  double learning_rate = 5e-5;
  std::string lr_scheduler_type = "linear";
  double weight_decay = 0.0;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_epsilon = 1e-8;
  int64_t per_device_train_batch_size = 8;
  int64_t gradient_accumulation_steps = 1;
  int64_t warmup_steps = 0;
  double warmup_ratio = 0.0;
  int64_t max_steps = -1;  // derived (docs/config.md) unless set
  double num_train_epochs = 1;
  std::optional<int64_t> seed;
  std::optional<int64_t> data_seed;
  int64_t dataloader_num_workers = 0;
  bool fp16 = false;
  bool bf16 = false;
  std::optional<bool> tf32;
  bool save_hf_model = false;
  std::optional<std::string> output_dir;

  template <typename V>
  void visit(V& v) {
    v("learning_rate", learning_rate);
    v("lr_scheduler_type", lr_scheduler_type);
    v("weight_decay", weight_decay);
    v("adam_beta1", adam_beta1);
    v("adam_beta2", adam_beta2);
    v("adam_epsilon", adam_epsilon);
    v("per_device_train_batch_size", per_device_train_batch_size);
    v("gradient_accumulation_steps", gradient_accumulation_steps);
    v("warmup_steps", warmup_steps);
    v("warmup_ratio", warmup_ratio);
    v("max_steps", max_steps);
    v("num_train_epochs", num_train_epochs);
    v("seed", seed);
    v("data_seed", data_seed);
    v("dataloader_num_workers", dataloader_num_workers);
    v("fp16", fp16);
    v("bf16", bf16);
    v("tf32", tf32);
    v("save_hf_model", save_hf_model);
    v("output_dir", output_dir);
    v.inert("lr_scheduler_kwargs");
    v.inert("logging_steps");
    v.inert("save_steps");
    v.inert("max_grad_norm");
  }
};

}  // namespace roll::config
