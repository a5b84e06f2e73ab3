#include "roll/pipeline/data/prompt_dataset.h"

#include <fmt/format.h>

#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/model/chat_template.h"
#include "roll/model/tokenizer.h"

namespace roll::pipeline {
namespace {

constexpr int64_t kMinTokens = 5;  // ROLL keeps 5 < len(input_ids)

const nlohmann::json* non_null(const nlohmann::json& row, const std::string& key) {
  auto it = row.find(key);
  return it == row.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace

nlohmann::json checked_messages(const nlohmann::json& value, const std::string& key) {
  nlohmann::json messages = value;
  if (value.is_string()) {
    try {
      messages = nlohmann::json::parse(value.get_ref<const std::string&>());
    } catch (const nlohmann::json::exception& e) {
      throw Error(fmt::format("\"{}\" is a string but not JSON: {}", key, e.what()));
    }
  }
  if (!messages.is_array() || messages.empty())
    throw Error(fmt::format("\"{}\" must be a non-empty list of {{role, content}} messages", key));
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& m = messages[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string())
      throw Error(fmt::format("\"{}\"[{}] must be an object with string \"role\" and \"content\"", key, i));
  }
  return messages;
}

int64_t PromptLoadStats::kept() const {
  int64_t n = 0;
  for (const auto& f : files) n += f.kept;
  return n;
}

int64_t PromptLoadStats::malformed() const {
  int64_t n = 0;
  for (const auto& f : files) n += f.malformed;
  return n;
}

int64_t PromptLoadStats::dropped_by_length() const {
  int64_t n = 0;
  for (const auto& f : files) n += f.too_short + f.too_long;
  return n;
}

PromptEncoder::PromptEncoder(const std::string& model_dir, PromptEncodingOptions options)
    : options_(std::move(options)),
      tokenizer_(std::make_shared<const model::Tokenizer>(model::Tokenizer::from_dir(model_dir))) {
  auto add = [&](const std::string& name) {
    if (!templates_.count(name))
      templates_.emplace(name, std::make_shared<const model::ChatTemplate>(model::ChatTemplate::from_model_dir(name, model_dir)));
  };
  add(options_.template_name);
  for (const auto& [tag, name] : options_.tag_to_template) add(name);
  const auto pad = tokenizer_->pad_id() ? tokenizer_->pad_id() : tokenizer_->eos_id();
  if (!pad) throw Error(fmt::format("{}: the tokenizer names neither a pad nor an eos token to pad prompts with", model_dir));
  pad_id_ = *pad;
}

const model::ChatTemplate& PromptEncoder::template_for(const nlohmann::json& row) const {
  if (const nlohmann::json* tag = non_null(row, options_.tag_key); tag && tag->is_string())
    for (const auto& [t, name] : options_.tag_to_template)
      if (t == tag->get_ref<const std::string&>()) return *templates_.at(name);
  return *templates_.at(options_.template_name);
}

std::string PromptEncoder::prompt_text(const nlohmann::json& row) const {
  if (!row.is_object()) throw Error(fmt::format("a row must be a JSON object, got {}", row.type_name()));
  if (const nlohmann::json* messages = non_null(row, options_.messages_key))
    return template_for(row).apply(checked_messages(*messages, options_.messages_key), /*add_generation_prompt=*/true);
  if (const nlohmann::json* prompt = non_null(row, options_.prompt_key)) {
    if (!prompt->is_string()) throw Error(fmt::format("\"{}\" must be a string", options_.prompt_key));
    return prompt->get<std::string>();
  }
  throw Error(fmt::format("the row has neither \"{}\" nor \"{}\"", options_.messages_key, options_.prompt_key));
}

std::string PromptEncoder::domain_of(const nlohmann::json& row) const {
  if (const nlohmann::json* domain = non_null(row, "domain")) {
    if (!domain->is_string()) throw Error(fmt::format("\"domain\" must be a string, got {}", domain->dump()));
    return domain->get<std::string>();
  }
  if (const nlohmann::json* tag = non_null(row, options_.tag_key); tag && tag->is_string()) {
    auto it = options_.tag_to_domain.find(tag->get_ref<const std::string&>());
    if (it != options_.tag_to_domain.end()) return it->second;
  }
  return "math_rule";
}

void encode_records(const std::string& file, const std::vector<JsonRecord>& records, const PromptEncoder& encoder,
                    PromptDataset& out) {
  PromptFileStats stats;
  stats.file = file;
  stats.rows = static_cast<int64_t>(records.size());
  auto malformed = [&](int64_t line, const std::string& why) {
    note_malformed_row(line, why, stats.malformed, stats.problems);
  };

  // Templates first (cheap, and where rows turn out malformed), then one batched tokenizer call.
  std::vector<std::string> texts;
  std::vector<PromptRow> rows;
  for (const JsonRecord& r : records) {
    if (!r.error.empty()) {
      malformed(r.line, r.error);
      continue;
    }
    try {
      std::string text = encoder.prompt_text(r.value);
      PromptRow row;
      row.fields = r.value;
      row.fields["domain"] = encoder.domain_of(r.value);
      row.origin = fmt::format("{}:{}", file, r.line);
      texts.push_back(std::move(text));
      rows.push_back(std::move(row));
    } catch (const Error& e) {
      malformed(r.line, e.what());
    } catch (const nlohmann::json::exception& e) {  // a value of an unexpected type deep in a row
      malformed(r.line, e.what());
    }
  }
  auto ids = encoder.tokenizer().encode_batch(texts, /*add_special_tokens=*/true);
  const int64_t limit = encoder.options().prompt_length;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto n = static_cast<int64_t>(ids[i].size());
    if (n <= kMinTokens) {
      ++stats.too_short;
    } else if (n > limit) {
      ++stats.too_long;
    } else {
      rows[i].input_ids = std::move(ids[i]);
      out.rows.push_back(std::move(rows[i]));
      ++stats.kept;
    }
  }

  const std::string named = malformed_summary(stats.malformed, stats.problems);
  if (stats.kept == 0)
    throw Error(fmt::format("{}: no usable rows ({} read: {} malformed, {} with <= {} tokens, {} longer than "
                            "prompt_length {}){}{}",
                            file, stats.rows, stats.malformed, stats.too_short, kMinTokens, stats.too_long, limit,
                            named.empty() ? "" : "; ", named));
  if (stats.malformed > 0)
    log::warn("{}: skipped {} malformed of {} rows: {}", file, stats.malformed, stats.rows, named);
  if (stats.too_short + stats.too_long > 0)
    log::info("{}: dropped {} rows with <= {} tokens and {} longer than prompt_length {}", file, stats.too_short,
              kMinTokens, stats.too_long, limit);
  out.stats.files.push_back(std::move(stats));
}

PromptDataset load_prompt_dataset(const std::vector<std::string>& files, const PromptEncoder& encoder) {
  PromptDataset out;
  for (const auto& file : files) encode_records(file, read_json_records(file), encoder, out);
  return out;
}

}  // namespace roll::pipeline
