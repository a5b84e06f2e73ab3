#pragma once
// Preference pairs for ROLL's DPO pipeline (roll/pipeline/dpo/dpo_pipeline.py, docs/dpo.md): JSON
// or JSON-lines rows with the prompt in `instruction` and the two responses in the columns
// `chosen_key` and `rejected_key` (strings). Each response is encoded as a one-turn conversation
// by the SFT encoder (sft_data.h: the chat template, the tokenizer, the trained assistant tokens).
// A pair with either side longer than sequence_length is dropped, as ROLL filters it; malformed
// rows are skipped, counted and named as file:line; no usable pair in a file is a roll::Error.
#include <cstdint>
#include <string>
#include <vector>

#include "roll/core/batch.h"
#include "roll/pipeline/data/sft_data.h"

namespace roll::pipeline {

struct DpoPair {
  SftSample chosen, rejected;
  std::string origin;  // "file:line"
};

struct DpoDataset {
  std::vector<DpoPair> pairs;
  int64_t rows = 0, malformed = 0, too_long = 0;
};

// `encoder` must read the prompt from `instruction` and the response from `output` (dpo_encoding_options).
SftEncodingOptions dpo_encoding_options(const config::PipelineConfig& config);
DpoDataset load_dpo_dataset(const std::vector<std::string>& files, const SftEncoder& encoder,
                            const std::string& chosen_key, const std::string& rejected_key);

// ROLL's DataCollatorWithPaddingForDPO: rows 2i and 2i+1 are pair i's chosen and rejected response,
// right-padded to sequence_length (input_ids, attention_mask, position_ids, labels as collate_sft),
// plus response_mask [2P, S] int64: 1 at the trained (assistant) tokens.
Batch collate_dpo(const std::vector<const DpoPair*>& pairs, int64_t sequence_length, int32_t pad_id);

}  // namespace roll::pipeline
