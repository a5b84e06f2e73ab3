#include "roll/pipeline/data/dpo_data.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "roll/config/pipeline_config.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/pipeline/data/data_files.h"
#include "roll/workers/sft_trainer.h"

namespace roll::pipeline {

SftEncodingOptions dpo_encoding_options(const config::PipelineConfig& c) {
  SftEncodingOptions o;
  const auto& data = c.actor_train.data_args;
  o.template_name = c.global_template ? *c.global_template : data ? data->template_name : "native";
  o.prompt_key = "instruction";
  o.response_key = "output";
  if (c.sequence_length) o.sequence_length = *c.sequence_length;
  return o;
}

namespace {

// The row's `key` as the response of a one-turn conversation.
SftSample encode_side(const SftEncoder& encoder, const nlohmann::json& row, const std::string& key) {
  if (!row.contains("instruction") || !row["instruction"].is_string())
    throw Error("column 'instruction' (the prompt, a string) is missing");
  if (!row.contains(key) || !row[key].is_string()) throw Error(fmt::format("column '{}' (a string) is missing", key));
  return encoder.encode(nlohmann::json{{"instruction", row["instruction"]}, {"output", row[key]}});
}

}  // namespace

DpoDataset load_dpo_dataset(const std::vector<std::string>& files, const SftEncoder& encoder,
                            const std::string& chosen_key, const std::string& rejected_key) {
  DpoDataset out;
  const auto limit = static_cast<size_t>(encoder.options().sequence_length);
  for (const auto& file : files) {
    int64_t malformed = 0, too_long = 0, kept = 0;
    std::vector<std::string> named;
    const auto records = read_json_records(file);
    for (const auto& r : records) {
      ++out.rows;
      if (!r.error.empty()) {
        note_malformed_row(r.line, r.error, malformed, named);
        continue;
      }
      DpoPair p;
      try {
        p.chosen = encode_side(encoder, r.value, chosen_key);
        p.rejected = encode_side(encoder, r.value, rejected_key);
      } catch (const Error& e) {
        note_malformed_row(r.line, e.what(), malformed, named);
        continue;
      }
      if (p.chosen.input_ids.size() > limit || p.rejected.input_ids.size() > limit) {
        ++too_long;
        continue;
      }
      p.origin = fmt::format("{}:{}", file, r.line);
      p.chosen.origin = p.origin + " (" + chosen_key + ")";
      p.rejected.origin = p.origin + " (" + rejected_key + ")";
      out.pairs.push_back(std::move(p));
      ++kept;
    }
    out.malformed += malformed;
    out.too_long += too_long;
    if (kept == 0)
      throw Error(fmt::format("{}: no usable preference pair in {} row(s) ({} malformed, {} longer than "
                              "sequence_length {}){}",
                              file, records.size(), malformed, too_long, limit,
                              malformed ? ": " + malformed_summary(malformed, named) : ""));
    if (malformed || too_long)
      log::warn("{}: {} of {} row(s) skipped: {} malformed{}, {} with a side longer than sequence_length {}", file,
                malformed + too_long, records.size(), malformed,
                malformed ? " (" + malformed_summary(malformed, named) + ")" : "", too_long, limit);
  }
  return out;
}

Batch collate_dpo(const std::vector<const DpoPair*>& pairs, int64_t sequence_length, int32_t pad_id) {
  if (pairs.empty()) throw Error("collate_dpo: no pairs");
  std::vector<const SftSample*> rows;
  for (const DpoPair* p : pairs) {
    rows.push_back(&p->chosen);
    rows.push_back(&p->rejected);
  }
  Batch out = collate_sft(rows, sequence_length, pad_id);
  // labels[:, t] is the trained token t+1: the response tokens are labels' columns shifted right.
  const at::Tensor trained = (out.tensor("labels") != workers::kIgnoreIndex).to(at::kLong);
  at::Tensor response = at::zeros_like(trained);
  response.slice(1, 1, sequence_length).copy_(trained.slice(1, 0, sequence_length - 1));
  out.set_tensor("response_mask", response);
  return out;
}

}  // namespace roll::pipeline
