// `roll model init`: write a randomly initialised HF model directory with the real Qwen tokenizer.
#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <thread>
#include <iostream>

#include "roll/cli/commands.h"
#include "roll/core/error.h"
#include "roll/core/progress.h"
#include "roll/model/model_init.h"

namespace roll::cli {

void register_model(CLI::App& app) {
  auto* model = app.add_subcommand("model", "Model directories");
  model->require_subcommand(1);
  auto opts = std::make_shared<model::ModelInitOptions>();
  auto* init = model->add_subcommand("init", "Write a randomly initialised HF model directory (seeded)");
  init->add_option("--preset", opts->preset, "tiny | small | qwen2.5-0.5b-shape")->capture_default_str();
  init->add_option("--arch", opts->arch, "qwen2 | qwen3 | llama")->capture_default_str();
  init->add_option("--out,-o", opts->out_dir, "Output directory")->required();
  init->add_option("--seed", opts->seed, "Random seed")->capture_default_str();
  init->add_option("--init-std", opts->init_std, "Std of the normal init (larger: peaked logits)")
      ->capture_default_str();
  init->add_option("--dtype", opts->dtype, "Stored dtype: fp32 | bf16")->capture_default_str();
  init->add_flag("!--untied", opts->tie_word_embeddings, "Separate lm_head weights (default: tied)");
  init->add_option("--tokenizer-dir", opts->tokenizer_dir,
                   "Directory with tokenizer.json and tokenizer_config.json (default: third_party/assets/qwen3)");
  init->add_option("--vocab", opts->vocab,
                   "Keep only the tokenizer's first N byte-level BPE ids (>= 256; special tokens follow); "
                   "0: the full vocabulary")
      ->capture_default_str();
  init->add_option("--hidden-size", opts->hidden_size, "Override the preset's hidden size");
  init->add_option("--layers", opts->num_layers, "Override the preset's layer count");
  init->add_option("--intermediate-size", opts->intermediate_size, "Override the preset's MLP size");
  init->add_option("--heads", opts->num_heads, "Override the preset's attention heads");
  init->add_option("--kv-heads", opts->num_kv_heads, "Override the preset's key/value heads");
  init->add_option("--rope-theta", opts->rope_theta,
                   "Override the preset's RoPE base (a small base separates nearby positions sooner)");
  init->callback([opts] {
    try {
      at::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
      auto t0 = std::chrono::steady_clock::now();
      ProgressOptions po;
      po.every_steps = 1;  // a line per phase when stderr is not a terminal
      auto progress = make_progress(po);
      opts->progress = progress.get();
      int64_t n = model::init_model_dir(*opts);
      opts->progress = nullptr;
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::cout << fmt::format("wrote {} ({} {}, {:.1f}M parameters, seed {}) in {:.1f}s\n", opts->out_dir,
                               opts->preset, opts->arch, n / 1e6, opts->seed, s);
      set_exit_code(0);
    } catch (const Error& e) {
      std::cerr << "error: " << e.what() << "\n";
      set_exit_code(1);
    }
  });
}

}  // namespace roll::cli
