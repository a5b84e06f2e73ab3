#pragma once
// The stop token ids ROLL passes to vLLM (docs/config.md): generation_config's eos ids, then the
// tokenizer's eos and pad, without repeats.
#include <cstdint>
#include <string>
#include <vector>

namespace roll::model {

class Tokenizer;

std::vector<int32_t> stop_token_ids(const std::string& model_dir, const Tokenizer& tokenizer);

}  // namespace roll::model
