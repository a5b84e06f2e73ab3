#include "roll/pipeline/data/sft_data.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "roll/config/schema.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/model/chat_template.h"
#include "roll/model/stop_tokens.h"
#include "roll/model/tokenizer.h"
#include "roll/pipeline/data/prompt_dataset.h"
#include "roll/workers/sft_trainer.h"

namespace roll::pipeline {
namespace {

// A string column of the row: nullopt when absent or null; a roll::Error when not a string.
std::optional<std::string> text_column(const nlohmann::json& row, const std::string& key) {
  auto it = row.find(key);
  if (it == row.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) throw Error(fmt::format("\"{}\" must be a string, got {}", key, it->type_name()));
  return it->get<std::string>();
}

std::string without_final_newline(std::string text) {
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

nlohmann::json first_messages(const nlohmann::json& messages, size_t n) {
  return nlohmann::json(
      std::vector<nlohmann::json>(messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(n)));
}

}  // namespace

SftEncodingOptions sft_encoding_options(const config::PipelineConfig& c) {
  SftEncodingOptions o;
  const auto& data = c.sft_train.data_args;
  o.template_name = c.global_template ? *c.global_template : data ? data->template_name : "native";
  if (data && data->messages) o.messages_key = *data->messages;
  if (c.prompt_key) o.prompt_key = *c.prompt_key;
  if (c.response_key) o.response_key = *c.response_key;
  o.query_key = c.query_key;
  o.system_key = c.system_key;
  if (c.sequence_length) o.sequence_length = *c.sequence_length;
  return o;
}

SftEncoder::SftEncoder(const std::string& model_dir, SftEncodingOptions options)
    : options_(std::move(options)),
      tokenizer_(std::make_shared<const model::Tokenizer>(model::Tokenizer::from_dir(model_dir))),
      template_(std::make_shared<const model::ChatTemplate>(
          model::ChatTemplate::from_model_dir(options_.template_name, model_dir))) {
  const auto pad = tokenizer_->pad_id() ? tokenizer_->pad_id() : tokenizer_->eos_id();
  if (!pad) throw Error(fmt::format("{}: the tokenizer names neither a pad nor an eos token to pad with", model_dir));
  pad_id_ = *pad;
  stop_ids_ = model::stop_token_ids(model_dir, *tokenizer_);
  if (options_.sequence_length < 2)
    throw ConfigError("sequence_length", fmt::format("sequence_length must be >= 2, got {}", options_.sequence_length));
}

SftEncoder::~SftEncoder() = default;

nlohmann::json SftEncoder::conversation(const nlohmann::json& row) const {
  if (!row.is_object()) throw Error(fmt::format("a row must be a JSON object, got {}", row.type_name()));
  const SftEncodingOptions& o = options_;
  if (o.messages_key) {
    auto it = row.find(*o.messages_key);
    if (it == row.end() || it->is_null()) throw Error(fmt::format("the row has no \"{}\"", *o.messages_key));
    nlohmann::json messages = checked_messages(*it, *o.messages_key);
    if (messages[0]["role"] == "assistant")
      throw Error(fmt::format("\"{}\"[0] is an assistant turn: a conversation must open with a system or user turn",
                              *o.messages_key));
    if (std::none_of(messages.begin(), messages.end(),
                     [](const nlohmann::json& m) { return m["role"] == "assistant"; }))
      throw Error(fmt::format("\"{}\" has no assistant turn to train on", *o.messages_key));
    return messages;
  }
  // ROLL's build_conversation.
  const std::optional<std::string> prompt = text_column(row, o.prompt_key);
  if (!prompt) throw Error(fmt::format("the row has no \"{}\" (prompt_key)", o.prompt_key));
  const std::optional<std::string> response = text_column(row, o.response_key);
  if (!response || response->empty())
    throw Error(fmt::format("the row has {} \"{}\" (response_key): nothing to train on", response ? "an empty" : "no",
                            o.response_key));
  const std::optional<std::string> query = o.query_key ? text_column(row, *o.query_key) : std::nullopt;
  const std::optional<std::string> system = o.system_key ? text_column(row, *o.system_key) : std::nullopt;
  nlohmann::json messages = nlohmann::json::array();
  if (system && !system->empty()) messages.push_back({{"role", "system"}, {"content", *system}});
  messages.push_back({{"role", "user"}, {"content", *prompt + (query && !query->empty() ? "\n" + *query : "")}});
  messages.push_back({{"role", "assistant"}, {"content", *response}});
  return messages;
}

SftSample SftEncoder::encode(const nlohmann::json& row) const {
  const nlohmann::json messages = conversation(row);
  const std::string full = without_final_newline(template_->apply(messages, /*add_generation_prompt=*/false));
  // texts[0] is the whole conversation, then the prompt part of each assistant turn.
  std::vector<std::string> texts{full};
  std::vector<size_t> turns;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (messages[i]["role"] != "assistant") continue;
    std::string prompt = template_->apply(first_messages(messages, i), /*add_generation_prompt=*/true);
    if (!full.starts_with(prompt))
      throw Error(
          fmt::format("the chat template '{}' does not render the conversation before message {} (with the "
                      "generation prompt) as the beginning of the whole conversation, so the assistant's "
                      "tokens cannot be told apart",
                      template_->name(), i));
    texts.push_back(std::move(prompt));
    turns.push_back(i);
  }
  std::vector<std::vector<int32_t>> ids = tokenizer_->encode_batch(texts, /*add_special_tokens=*/true, 1);
  SftSample s;
  s.input_ids = std::move(ids[0]);
  const size_t n = s.input_ids.size();
  s.target.assign(n, 0);
  for (size_t k = 0; k < turns.size(); ++k) {
    const size_t begin = std::min(ids[k + 1].size(), n);
    size_t end = n;  // the last message: to the end of the text, as ROLL
    if (turns[k] + 1 < messages.size()) {
      // An earlier turn ends with its end-of-turn token; templates may render a turn differently once
      // later turns follow (Qwen3 drops the empty think block), so the rendering of the conversation
      // up to this turn cannot tell where it ends in the whole.
      const size_t limit = k + 1 < turns.size() ? std::min(ids[k + 2].size(), n) : n;
      end = begin;
      while (end < limit && std::find(stop_ids_.begin(), stop_ids_.end(), s.input_ids[end]) == stop_ids_.end()) ++end;
      if (end == limit)
        throw Error(fmt::format("assistant message {} has no end-of-turn token (ids {}) before the next turn", turns[k],
                                fmt::join(stop_ids_, ", ")));
      ++end;
    }
    std::fill(s.target.begin() + static_cast<std::ptrdiff_t>(begin),
              s.target.begin() + static_cast<std::ptrdiff_t>(end), 1);
  }
  if (std::find(s.target.begin(), s.target.end(), 1) == s.target.end())
    throw Error("the assistant turns render to no token of their own");
  return s;
}

void encode_sft_records(const std::string& file, const std::vector<JsonRecord>& records, const SftEncoder& encoder,
                        SftDataset& out) {
  SftFileStats stats;
  stats.file = file;
  stats.rows = static_cast<int64_t>(records.size());
  const auto limit = static_cast<size_t>(encoder.options().sequence_length);
  for (const JsonRecord& r : records) {
    if (!r.error.empty()) {
      note_malformed_row(r.line, r.error, stats.malformed, stats.problems);
      continue;
    }
    SftSample s;
    try {
      s = encoder.encode(r.value);
    } catch (const Error& e) {
      note_malformed_row(r.line, e.what(), stats.malformed, stats.problems);
      continue;
    } catch (const nlohmann::json::exception& e) {  // a value of an unexpected type deep in a row
      note_malformed_row(r.line, e.what(), stats.malformed, stats.problems);
      continue;
    }
    if (s.input_ids.size() > limit) {
      ++stats.truncated;
      s.input_ids.resize(limit);
      s.target.resize(limit);
    }
    // Position 0 has no token before it to predict it from.
    if (std::find(s.target.begin() + 1, s.target.end(), 1) == s.target.end()) ++stats.no_target;
    s.origin = fmt::format("{}:{}", file, r.line);
    out.rows.push_back(std::move(s));
    ++stats.kept;
  }
  const std::string named = malformed_summary(stats.malformed, stats.problems);
  if (stats.kept == 0)
    throw Error(fmt::format("{}: no usable SFT rows ({} read, {} malformed){}{}", file, stats.rows, stats.malformed,
                            named.empty() ? "" : ": ", named));
  if (stats.malformed > 0)
    log::warn("{}: skipped {} malformed of {} rows: {}", file, stats.malformed, stats.rows, named);
  if (stats.truncated > 0)
    log::info("{}: {} rows longer than sequence_length {} were truncated ({} of them keep no trained token)", file,
              stats.truncated, limit, stats.no_target);
  out.files.push_back(std::move(stats));
}

SftDataset load_sft_dataset(const std::vector<std::string>& files, const SftEncoder& encoder) {
  SftDataset out;
  for (const auto& file : files) encode_sft_records(file, read_json_records(file), encoder, out);
  return out;
}

Batch collate_sft(const std::vector<const SftSample*>& rows, int64_t sequence_length, int32_t pad_id) {
  if (rows.empty()) throw Error("collate_sft: no rows");
  const auto B = static_cast<int64_t>(rows.size()), S = sequence_length;
  at::Tensor ids = at::full({B, S}, pad_id, at::kLong);
  at::Tensor mask = at::zeros({B, S}, at::kLong);
  at::Tensor labels = at::full({B, S}, workers::kIgnoreIndex, at::kLong);
  auto I = ids.accessor<int64_t, 2>(), M = mask.accessor<int64_t, 2>(), L = labels.accessor<int64_t, 2>();
  for (int64_t b = 0; b < B; ++b) {
    const SftSample& s = *rows[static_cast<size_t>(b)];
    const auto n = static_cast<int64_t>(s.input_ids.size());
    if (n > S) throw Error(fmt::format("{}: {} tokens do not fit sequence_length {}", s.origin, n, S));
    for (int64_t t = 0; t < n; ++t) {
      I[b][t] = s.input_ids[static_cast<size_t>(t)];
      M[b][t] = 1;
      if (t > 0 && s.target[static_cast<size_t>(t)]) L[b][t - 1] = s.input_ids[static_cast<size_t>(t)];
    }
  }
  Batch out(B);
  out.set_tensor("input_ids", ids);
  out.set_tensor("attention_mask", mask);
  out.set_tensor("position_ids", (mask.cumsum(1) - 1).clamp_min(0));
  out.set_tensor("labels", labels);
  return out;
}

SftStepPlan plan_sft_steps(int64_t configured_max_steps, int64_t rows, int64_t dp_size,
                           int64_t per_device_train_batch_size, int64_t gradient_accumulation_steps,
                           double num_train_epochs, const std::string& role) {
  const std::string ta = role + ".training_args.";
  const std::pair<std::string, int64_t> sizes[] = {
      {ta + "per_device_train_batch_size", per_device_train_batch_size},
      {ta + "gradient_accumulation_steps", gradient_accumulation_steps},
      {role + ".world_size", dp_size}};
  for (const auto& [key, v] : sizes)
    if (v < 1) throw ConfigError(key, fmt::format("{} must be >= 1, got {}", key, v));
  SftStepPlan p;
  p.global_batch = dp_size * per_device_train_batch_size * gradient_accumulation_steps;
  p.steps_per_epoch = rows / p.global_batch;
  if (p.steps_per_epoch < 1)
    throw ConfigError(
        role + ".data_args.file_name",
        fmt::format("{}.data_args.file_name: the data has {} usable rows, fewer than one "
                    "global batch of {} (data parallel {} x per_device_train_batch_size {} x "
                    "gradient_accumulation_steps {})",
                    role, rows, p.global_batch, dp_size, per_device_train_batch_size, gradient_accumulation_steps));
  if (configured_max_steps > 0) {
    p.pipeline_steps = configured_max_steps;
    p.epochs = (configured_max_steps + p.steps_per_epoch - 1) / p.steps_per_epoch;
  } else {
    if (!(num_train_epochs > 0))
      throw ConfigError(ta + "num_train_epochs",
                        fmt::format("{}num_train_epochs must be > 0 when max_steps is not set, got {}", ta,
                                    num_train_epochs));
    p.epochs = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(num_train_epochs)));
    p.pipeline_steps = p.epochs * p.steps_per_epoch;
  }
  p.worker_max_steps = p.pipeline_steps * dp_size;
  return p;
}

}  // namespace roll::pipeline
