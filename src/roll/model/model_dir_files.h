#pragma once
// The files of an HF model directory besides config.json and the weights (tokenizer.json,
// tokenizer_config.json, generation_config.json, chat templates, ...): what a directory written
// from a model (a checkpoint, a merged LoRA model) copies from the one it came from.
#include <string>
#include <vector>

namespace roll::model {

// Copies them from `from` into `to` (overwriting); returns the paths written. A `from` that is
// empty or not a directory copies nothing.
std::vector<std::string> copy_tokenizer_files(const std::string& from, const std::string& to);

}  // namespace roll::model
