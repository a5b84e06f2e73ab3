#pragma once
// Byte-level BPE tokenizer read from a Hugging Face tokenizer.json (+ tokenizer_config.json),
// encoding as HF `tokenizers` does (llama.cpp's llama-vocab plays the same part):
//   invalid UTF-8 -> U+FFFD per maximal subpart; added tokens matched first (longest match,
//   lstrip/rstrip/single_word/normalized as HF); normalizer (NFC/NFKC/...); pre-tokenizer
//   (Split regex from the file, run by PCRE2, then ByteLevel); BPE merges by rank with a per-word
//   cache; post-processor (TemplateProcessing/Bert/Roberta) when add_special_tokens.
// A Tokenizer is immutable after loading; encode/decode are safe to call from many threads.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace roll::model {

using TokenId = int32_t;

class Tokenizer {
 public:
  // Loads tokenizer.json; tokenizer_config.json (optional, "" for none) adds added tokens and
  // special flags (added_tokens_decoder), the eos/pad/bos/unk token names, chat_template,
  // split_special_tokens and clean_up_tokenization_spaces. Throws roll::Error naming the file on
  // a missing file, bad JSON or an unsupported model / normalizer / pre-tokenizer / decoder.
  static Tokenizer from_files(const std::string& tokenizer_json, const std::string& tokenizer_config_json = {});
  // A HF model directory: tokenizer.json, and tokenizer_config.json / chat_template.jinja if present.
  static Tokenizer from_dir(const std::string& dir);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Special tokens in the text (<|im_start|>, ...) are always recognised unless the config sets
  // split_special_tokens; add_special_tokens only runs the post-processor (BOS/EOS templates),
  // as in HF (a no-op for Qwen, whose post-processor is ByteLevel).
  std::vector<TokenId> encode(std::string_view text, bool add_special_tokens = true) const;
  // num_threads <= 0: one per hardware thread, at most one per text.
  std::vector<std::vector<TokenId>> encode_batch(const std::vector<std::string>& texts,
                                                 bool add_special_tokens = true, int num_threads = 0) const;

  // ByteLevel decoder; bytes that do not form UTF-8 become U+FFFD (as HF). Unknown ids are skipped.
  std::string decode(std::span<const TokenId> ids, bool skip_special_tokens = false) const;

  // Token strings as stored in the vocabulary (byte-level form, "Ġhello") or an added token's content.
  std::optional<TokenId> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(TokenId id) const;
  bool is_special(TokenId id) const;
  // Largest id + 1, added tokens included (151669 for Qwen2.5/Qwen3; the model's embedding
  // table may be larger).
  int32_t vocab_size() const;

  std::optional<TokenId> eos_id() const;
  std::optional<TokenId> pad_id() const;
  std::optional<TokenId> bos_id() const;
  const std::string& eos_token() const;  // "" when the config names none
  const std::string& pad_token() const;
  const std::string& bos_token() const;
  // tokenizer_config.json's chat_template (the "default" entry of a list form), or
  // chat_template.jinja of the directory; "" when there is none.
  const std::string& chat_template() const;

  // The per-word merge cache (benchmarks measure cold vs warm).
  void clear_cache() const;
  size_t cache_entries() const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace roll::model
