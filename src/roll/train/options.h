#pragma once
// Everything the training strategy needs, as plain data. Filled from a ROLL worker config by
// train_options_from_config (options_from_config.h) or directly by tests and benchmarks. The
// in-class values are neutral (no learning, no clipping, no recompute, one sample per micro-batch),
// not defaults: the defaults a ROLL config gets live once, in config/ (training_args.h,
// ppo_config.h, base_config.h, model_args.h). The AdamW constants are torch.optim.AdamW's.
#include <cstdint>
#include <string>
#include <vector>

namespace roll::train {

struct TrainOptions {
  // Optimizer: "adamw" (torch.optim.AdamW semantics, decoupled weight decay) or "sgd" (plain
  // p -= lr * g; tests and baselines).
  std::string optimizer = "adamw";
  double learning_rate = 0.0;
  double adam_beta1 = 0.9, adam_beta2 = 0.999, adam_epsilon = 1e-8;
  double weight_decay = 0.0;

  // LR schedule (HF names): linear | cosine | constant | constant_with_warmup.
  std::string lr_scheduler_type = "constant";
  int64_t warmup_steps = 0;    // > 0 wins over warmup_ratio
  double warmup_ratio = 0.0;   // warmup = ceil(total_steps * ratio)
  int64_t total_steps = 1;     // optimizer steps the schedule spans (already ÷ dp size)

  // Step mechanics (docs/rl.md).
  int64_t per_device_train_batch_size = 1;
  int64_t gradient_accumulation_steps = 1;
  double max_grad_norm = 0.0;  // <= 0: no clipping (the norm is still computed and reported)
  int64_t ppo_epochs = 1;
  uint64_t seed = 0;
  bool gradient_checkpointing = false;  // per decoder layer; on unless disable_gradient_checkpointing

  // Parallelism. ZeRO stage 0 = plain data parallel (every rank holds everything); 1 shards the
  // optimizer state; 2 also the gradients; 3 also the parameters (gathered per layer when used).
  int zero_stage = 0;
  bool offload_optimizer = false;  // accepted; on CPU the state already lives in host memory
  std::vector<std::string> notes;  // how the config was interpreted (reported by describe())

  // Checkpoints.
  int64_t max_ckpt_to_keep = 0;  // 0 keeps every checkpoint
  std::string tokenizer_dir;     // copied into each checkpoint (the model directory), may be empty
};

}  // namespace roll::train
