#pragma once
// RLVR prompts (docs/pipelines.md): the rows of the data files, encoded and filtered.
//   text    a row's `messages` (a list of {role, content}, or that list as a JSON string) through the
//           chat template with the generation prompt; else its `prompt` column as it is (no template)
//   tokens  the tokenizer on that text (with add_special_tokens, as ROLL's tokenizer(text) call)
//   kept    5 < tokens <= prompt_length
//   domain  the row's non-null `domain`, else tag_to_domain[tag], else "math_rule"
// The template is `template_name`, or tag_to_template[tag] when the row's tag is listed there.
// Every column of a row is kept (as the non-tensor fields the collator passes on), with `domain`
// filled in. Malformed rows (bad JSON, neither messages nor prompt, messages that are not a list of
// {role, content} strings, a template that refuses them, a non-string domain) are skipped, counted
// and reported per file with their line numbers; a file with no usable row is a roll::Error.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "roll/pipeline/data/data_files.h"

namespace roll::model {
class ChatTemplate;
class Tokenizer;
}  // namespace roll::model

namespace roll::pipeline {

struct PromptRow {
  std::vector<int32_t> input_ids;
  nlohmann::json fields;  // the row's columns (an object), `domain` set
  std::string origin;     // "file:line", for messages

  const std::string& domain() const { return fields.at("domain").get_ref<const std::string&>(); }
};

struct PromptFileStats {
  std::string file;
  int64_t rows = 0;       // records read (non-blank lines or array elements)
  int64_t malformed = 0;
  int64_t too_short = 0;  // <= 5 tokens
  int64_t too_long = 0;   // > prompt_length tokens
  int64_t kept = 0;
  std::vector<std::string> problems;  // "line N: why", the first few malformed rows
};

struct PromptLoadStats {
  std::vector<PromptFileStats> files;
  int64_t kept() const;
  int64_t malformed() const;
  int64_t dropped_by_length() const;
};

struct PromptEncodingOptions {
  std::string template_name = "native";
  std::vector<std::pair<std::string, std::string>> tag_to_template;
  std::string messages_key = "messages";
  std::string prompt_key = "prompt";
  std::string tag_key = "tag";
  int64_t prompt_length = 1024;
  std::map<std::string, std::string> tag_to_domain;
};

class PromptEncoder {
 public:
  // The tokenizer and the chat templates come from `model_dir` (tokenizer.json, tokenizer_config.json).
  // Unknown template names are a roll::Error listing the known ones.
  PromptEncoder(const std::string& model_dir, PromptEncodingOptions options);

  // The text to tokenize, or a roll::Error saying what is wrong with the row.
  std::string prompt_text(const nlohmann::json& row) const;
  // The row's domain, or a roll::Error when its `domain` is neither null nor a string.
  std::string domain_of(const nlohmann::json& row) const;

  const model::Tokenizer& tokenizer() const { return *tokenizer_; }
  std::shared_ptr<const model::Tokenizer> shared_tokenizer() const { return tokenizer_; }
  // The pad token (eos when the tokenizer names no pad, as ROLL's tokenizer provider does).
  int32_t pad_id() const { return pad_id_; }
  const PromptEncodingOptions& options() const { return options_; }

 private:
  const model::ChatTemplate& template_for(const nlohmann::json& row) const;

  PromptEncodingOptions options_;
  std::shared_ptr<const model::Tokenizer> tokenizer_;
  std::map<std::string, std::shared_ptr<const model::ChatTemplate>> templates_;
  int32_t pad_id_ = 0;
};

struct PromptDataset {
  std::vector<PromptRow> rows;
  PromptLoadStats stats;
};

// A messages value as ROLL accepts it: a non-empty list (or its JSON string) of objects with string
// "role" and "content"; else a roll::Error naming `key` (the column) and what is wrong.
nlohmann::json checked_messages(const nlohmann::json& value, const std::string& key);

// Reads, encodes and filters every file (paths as expand_data_files gives them), in order. Logs a
// warning per file with malformed rows naming the first few lines.
PromptDataset load_prompt_dataset(const std::vector<std::string>& files, const PromptEncoder& encoder);

// One file's records, already read (`file` names them in messages): appends its rows and stats to
// `out`; throws roll::Error naming the file when none of its rows is usable.
void encode_records(const std::string& file, const std::vector<JsonRecord>& records, const PromptEncoder& encoder,
                    PromptDataset& out);

}  // namespace roll::pipeline
