#pragma once
// A smaller vocabulary for demo and test models: the first `vocab` ids of a byte-level BPE
// tokenizer.json (its 256 byte symbols, then one token per merge in rank order, so merges of rank
// < vocab - 256 are kept and every kept merge yields a kept token), with the added (special) tokens
// renumbered to follow them. The result is a valid tokenizer: every string still encodes (into
// shorter merges), and a model's embedding shrinks from 151936 rows to a few thousand, which is
// what makes training on a 2-core CPU fast (docs/demo.md, "What the demo is built from").
#include <cstdint>
#include <utility>

#include <nlohmann/json.hpp>

namespace roll::model {

struct TrimmedTokenizer {
  nlohmann::json tokenizer;         // tokenizer.json
  nlohmann::json tokenizer_config;  // tokenizer_config.json (added_tokens_decoder renumbered)
  int64_t vocab_size = 0;           // regular + added tokens
};

// Throws roll::Error when the tokenizer is not byte-level BPE whose merge r yields id 256 + r, or
// when `vocab` is outside [256, its regular vocabulary size].
TrimmedTokenizer trim_tokenizer(const nlohmann::json& tokenizer, const nlohmann::json& tokenizer_config,
                                int64_t vocab);

}  // namespace roll::model
