#pragma once
// Training checkpoints (docs/pipelines.md/9.2): <root>/checkpoint-<step>/ holds the HF model (config.json,
// safetensors in the model dtype, the tokenizer files copied from the model directory), and
// train_state/rank-<r>-of-<n>.safetensors per rank (optimizer moments, fp32 master weights when the
// model is bf16, CPU RNG state; steps and layout in its metadata), and manifest.json listing every
// file with its size. Everything is written under <root>/.checkpoint-<step>.partial and renamed
// when complete, so a crash never leaves a directory that looks loadable; loading re-checks the
// manifest, so a truncated one is refused as well.
#include <cstdint>
#include <optional>
#include <string>

namespace roll::train {

class TrainStrategy;

// Collective: every rank calls it. Returns the checkpoint directory. Prunes old checkpoints to
// options().max_ckpt_to_keep afterwards (0 keeps all).
std::string save_checkpoint(TrainStrategy& strategy, const std::string& root, int64_t step);
// Restores weights, optimizer and scheduler state and the RNG; errors name what is wrong.
void load_checkpoint(TrainStrategy& strategy, const std::string& dir);

// Empty when `dir` is a complete checkpoint, else the reason it is not.
std::string checkpoint_problem(const std::string& dir);
// The newest complete checkpoint-<N> under root (incomplete ones are skipped).
std::optional<std::string> latest_checkpoint(const std::string& root);
// Deletes the oldest checkpoint-<N> directories under root beyond the newest `keep` (keep <= 0: none).
void prune_checkpoints(const std::string& root, int64_t keep);

}  // namespace roll::train
