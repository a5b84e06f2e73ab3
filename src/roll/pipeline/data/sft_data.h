#pragma once
// SFT examples from JSON / JSON-lines rows (ROLL's sft_pipeline.get_encode_function and
// DataCollatorForSFT). A row is one conversation:
//   columns   ROLL's form: `prompt_key` (default instruction), plus "\n" + `query_key` when set and
//             non-empty, is the user turn; `system_key` (when set and non-empty) the system turn;
//             `response_key` (default output) the assistant turn, which is trained.
//   messages  rollcpp's extension, when data_args.messages names a column: a {role, content} list
//             (or its JSON string); every assistant turn is trained.
// Text: the chat template renders the whole conversation (one trailing "\n" dropped, as ROLL) and,
// per assistant turn, the conversation before it with the generation prompt (its prompt part),
// which must be a prefix of the whole. Tokens: the tokenizer on the whole conversation (with
// add_special_tokens, as ROLL's tokenizer(text)). A turn's trained tokens start at the token count
// of its prompt part (ROLL's labels = [-100] * len(prompt ids) + ids[len(prompt ids):]); the last
// message's run to the end of the text (its end-of-turn token included, the newline after it not),
// an earlier turn's to its first end-of-turn token (stop_token_ids: generation_config's eos, the
// tokenizer's eos and pad), included.
// Truncation as DataCollatorForSFT: the first sequence_length tokens are kept (a long response
// loses its tail; a row whose prompt fills the window trains nothing and is counted).
// Malformed rows (bad JSON, a missing or non-string column, an empty response, messages without an
// assistant turn or opening with one, a template that refuses the row or whose prompt part of a turn
// is not a prefix of the whole, an earlier turn without an end-of-turn token) are skipped, counted
// and named as file:line; a file with no usable row is a roll::Error.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "roll/core/batch.h"
#include "roll/pipeline/data/data_files.h"

namespace roll::config {
struct PipelineConfig;
}
namespace roll::model {
class ChatTemplate;
class Tokenizer;
}  // namespace roll::model

namespace roll::pipeline {

struct SftEncodingOptions {
  std::string template_name = "native";
  std::optional<std::string> messages_key;  // set: the messages form
  std::string prompt_key = "instruction";
  std::optional<std::string> query_key;
  std::string response_key = "output";
  std::optional<std::string> system_key;
  int64_t sequence_length = 2048;
};

// From the config: template global_template, else sft_train.data_args.template; messages from
// sft_train.data_args.messages; the column keys; sequence_length.
SftEncodingOptions sft_encoding_options(const config::PipelineConfig& config);

struct SftSample {
  std::vector<int32_t> input_ids;  // at most sequence_length
  std::vector<uint8_t> target;     // per token: 1 when trained (an assistant token)
  std::string origin;              // "file:line"
};

class SftEncoder {
 public:
  // The tokenizer and the chat template come from `model_dir`; an unknown template name is a
  // roll::Error listing the known ones.
  SftEncoder(const std::string& model_dir, SftEncodingOptions options);
  ~SftEncoder();

  // The row as a message list, or a roll::Error saying what is wrong with it.
  nlohmann::json conversation(const nlohmann::json& row) const;
  // The row's tokens and trained positions, not truncated; roll::Error when malformed.
  SftSample encode(const nlohmann::json& row) const;

  const model::Tokenizer& tokenizer() const { return *tokenizer_; }
  int32_t pad_id() const { return pad_id_; }  // the pad token, else eos (ROLL's tokenizer provider)
  const SftEncodingOptions& options() const { return options_; }

 private:
  SftEncodingOptions options_;
  std::shared_ptr<const model::Tokenizer> tokenizer_;
  std::shared_ptr<const model::ChatTemplate> template_;
  std::vector<int32_t> stop_ids_;  // end-of-turn tokens
  int32_t pad_id_ = 0;
};

struct SftFileStats {
  std::string file;
  int64_t rows = 0;       // records read
  int64_t malformed = 0;
  int64_t truncated = 0;  // longer than sequence_length
  int64_t no_target = 0;  // kept, but no trained token is left in the window
  int64_t kept = 0;
  std::vector<std::string> problems;  // the first few malformed rows, "line N: why"
};

struct SftDataset {
  std::vector<SftSample> rows;
  std::vector<SftFileStats> files;
};

// Reads and encodes every file (paths as expand_data_files gives them), in order, truncating to
// sequence_length. Logs a warning per file with malformed or untrainable rows.
SftDataset load_sft_dataset(const std::vector<std::string>& files, const SftEncoder& encoder);
// One file's records, already read (`file` names them in messages): appends to `out`; a roll::Error
// naming the file and the first problems when none of its rows is usable.
void encode_sft_records(const std::string& file, const std::vector<JsonRecord>& records, const SftEncoder& encoder,
                        SftDataset& out);

// DataCollatorForSFT with padding "max_length" on the right: input_ids padded with `pad_id`,
// attention_mask, position_ids = clip(cumsum(attention_mask) - 1, 0), and labels shifted left by one
// (labels[:, t] = input_ids[:, t+1] where that token is trained, else -100; the last column -100),
// all [B, sequence_length] int64. A row longer than sequence_length is a roll::Error naming it.
Batch collate_sft(const std::vector<const SftSample*>& rows, int64_t sequence_length, int32_t pad_id);

// ROLL's SFT step plan (roll/pipeline/sft/step_planning.py): global batch = dp x
// per_device_train_batch_size x gradient_accumulation_steps rows; steps_per_epoch = rows / global
// batch (the last partial batch is dropped); max_steps > 0 gives that many steps over
// ceil(max_steps / steps_per_epoch) epochs, else ceil(num_train_epochs) whole epochs. The workers'
// training_args.max_steps is steps x dp (their LR schedule divides it by dp). Bad sizes, and data
// without one whole global batch, are roll::ConfigErrors naming the key (under `role`).
struct SftStepPlan {
  int64_t global_batch = 0;
  int64_t steps_per_epoch = 0;
  int64_t epochs = 0;
  int64_t pipeline_steps = 0;
  int64_t worker_max_steps = 0;
};
SftStepPlan plan_sft_steps(int64_t configured_max_steps, int64_t rows, int64_t dp_size,
                           int64_t per_device_train_batch_size, int64_t gradient_accumulation_steps,
                           double num_train_epochs, const std::string& role = "sft_train");

}  // namespace roll::pipeline
