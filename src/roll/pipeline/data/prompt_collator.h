#pragma once
// ROLL's DataCollatorWithPaddingForPaddedKeys as the RLVR pipeline uses it (padding "max_length",
// the tokenizer's left padding side): input_ids left-padded to exactly `max_length` with the pad
// token, attention_mask 1 on the tokens, position_ids = clip(cumsum(attention_mask) - 1, 0), all
// [B, max_length] int64; every other field of the rows becomes a non-tensor column (a row without a
// field gets null there, as a datasets column would hold). Fields named like the tensors are
// replaced by them.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "roll/core/batch.h"

namespace roll::pipeline {

struct PromptSample {
  const std::vector<int32_t>* input_ids;
  const nlohmann::json* fields;  // an object, or null for none
};

// Throws roll::Error when a row has more than max_length tokens (naming the row and both lengths) or
// there are no rows.
Batch collate_prompts(const std::vector<PromptSample>& samples, int64_t max_length, int32_t pad_id);

}  // namespace roll::pipeline
