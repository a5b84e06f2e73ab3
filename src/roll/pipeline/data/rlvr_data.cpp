#include "roll/pipeline/data/rlvr_data.h"

#include <fmt/format.h>

#include <map>
#include <utility>

#include "roll/config/model_path.h"
#include "roll/config/schema.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/pipeline/data/data_files.h"
#include "roll/pipeline/data/prompt_collator.h"
#include "roll/pipeline/data/stratified_sampler.h"

namespace roll::pipeline {

PromptEncodingOptions rlvr_encoding_options(const config::PipelineConfig& c) {
  PromptEncodingOptions o;
  const auto& da = c.actor_train.data_args;
  o.template_name = c.global_template ? *c.global_template : da ? da->template_name : "native";
  o.tag_to_template = c.tag_to_template;
  if (da) {
    if (da->messages) o.messages_key = *da->messages;
    if (da->prompt) o.prompt_key = *da->prompt;
    o.tag_key = da->tag;
  }
  o.prompt_length = c.prompt_length;
  for (const auto& [domain, reward] : c.rewards)
    for (const auto& tag : reward.worker.tag_included) o.tag_to_domain.emplace(tag, domain);
  // On-policy distillation, as ROLL: a teacher's tag that no reward covers is a domain of its own.
  for (const auto& [name, teacher] : c.opd_teachers)
    for (const auto& tag : teacher.tag_included) o.tag_to_domain.emplace(tag, tag);
  return o;
}

Batch collate_rows(const std::vector<const PromptRow*>& rows, int64_t prompt_length, int32_t pad_id) {
  std::vector<PromptSample> samples;
  samples.reserve(rows.size());
  for (const PromptRow* r : rows) samples.push_back({&r->input_ids, &r->fields});
  return collate_prompts(samples, prompt_length, pad_id);
}

RlvrPromptData RlvrPromptData::load(const config::PipelineConfig& c) {
  const auto& name = c.actor_train.model_args.model_name_or_path;
  if (!name) throw ConfigError("actor_train.model_args.model_name_or_path", "RLVR needs the actor's model directory");
  return load(c, config::resolve_model_path(*name, "actor_train.model_args.model_name_or_path"));
}

RlvrPromptData RlvrPromptData::load(const config::PipelineConfig& c, const std::string& tokenizer_dir) {
  const auto& da = c.actor_train.data_args;
  if (!da || da->file_name.empty())
    throw ConfigError("actor_train.data_args.file_name", "RLVR needs training data files");
  if (da->domain_interleave_probs.empty())
    throw ConfigError("actor_train.data_args.domain_interleave_probs",
                      "RLVR needs domain_interleave_probs, e.g. {math_rule: 1}");
  for (const auto* args : {&da, c.validation ? &c.validation->data_args : nullptr})
    if (args && *args && (*args)->dataset_type != "json")
      throw NotSupportedError(fmt::format("data_args.dataset_type '{}' (only json data files)", (*args)->dataset_type));
  const PromptEncoder encoder(tokenizer_dir, rlvr_encoding_options(c));

  RlvrPromptData out;
  out.prompt_length_ = c.prompt_length;
  out.pad_id_ = encoder.pad_id();
  PromptDataset train = load_prompt_dataset(expand_data_files(da->file_name, "actor_train.data_args.file_name"), encoder);
  out.train_stats_ = std::move(train.stats);

  // Rows per domain, in domain_interleave_probs order; the others are counted and left out.
  std::map<std::string, std::vector<PromptRow>> by_domain;
  for (auto& r : train.rows) {
    const std::string d = r.domain();
    by_domain[d].push_back(std::move(r));
  }
  const DomainCounts sizes = split_batch(da->domain_interleave_probs, c.rollout_batch_size);
  std::string counts;
  for (const auto& [d, rows] : by_domain) counts += fmt::format("{}{}: {}", counts.empty() ? "" : ", ", d, rows.size());
  for (const auto& [domain, batch_size] : sizes) {
    const std::string key = "actor_train.data_args.domain_interleave_probs." + domain;
    std::vector<PromptRow> rows;
    if (auto it = by_domain.find(domain); it != by_domain.end()) {
      rows = std::move(it->second);
      by_domain.erase(it);
    }
    const auto n = static_cast<int64_t>(rows.size());
    if (n == 0)
      throw ConfigError(key, fmt::format("domain '{}' has no training rows (rows per domain: {})", domain, counts));
    if (batch_size >= n)
      throw ConfigError(key, fmt::format("domain '{}' takes {} prompts per step (of rollout_batch_size {}) but has only "
                                         "{} rows; it needs more rows than prompts per step",
                                         domain, batch_size, c.rollout_batch_size, n));
    if (batch_size == 0)
      log::warn("{}: domain '{}' gets 0 of rollout_batch_size {} prompts per step", key, domain, c.rollout_batch_size);
    out.domains_.push_back({domain, std::move(rows), batch_size, DatasetIterator(n, c.seed)});
  }
  for (const auto& [d, rows] : by_domain)
    log::warn("{} training rows of domain '{}' are not used: it is not in actor_train.data_args.domain_interleave_probs",
              rows.size(), d);

  if (c.validation && c.validation->data_args && !c.validation->data_args->file_name.empty()) {
    PromptDataset val = load_prompt_dataset(
        expand_data_files(c.validation->data_args->file_name, "validation.data_args.file_name"), encoder);
    out.validation_ = std::move(val.rows);
    out.validation_stats_ = std::move(val.stats);
  }
  return out;
}

const DomainPrompts& RlvrPromptData::domain(const std::string& name) const {
  for (const auto& d : domains_)
    if (d.domain == name) return d;
  std::string known;
  for (const auto& d : domains_) known += (known.empty() ? "" : ", ") + d.domain;
  throw Error(fmt::format("no training domain '{}' (domains: {})", name, known));
}

DomainPrompts& RlvrPromptData::mutable_domain(const std::string& name) {
  return const_cast<DomainPrompts&>(std::as_const(*this).domain(name));
}

Batch RlvrPromptData::next_batch(const std::string& name) { return next_batch(name, domain(name).batch_size); }

Batch RlvrPromptData::next_batch(const std::string& name, int64_t n) {
  DomainPrompts& d = mutable_domain(name);
  std::vector<const PromptRow*> rows;
  for (int64_t index : d.iterator.next(n)) rows.push_back(&d.rows[static_cast<size_t>(index)]);
  return collate_rows(rows, prompt_length_, pad_id_);
}

Batch RlvrPromptData::validation_batch() const {
  std::vector<const PromptRow*> rows;
  for (const auto& r : validation_) rows.push_back(&r);
  return collate_rows(rows, prompt_length_, pad_id_);
}

nlohmann::json RlvrPromptData::state() const {
  nlohmann::json s = nlohmann::json::object();
  for (const auto& d : domains_) s["scheduler_state_" + d.domain] = d.iterator.state();
  return s;
}

void RlvrPromptData::restore(const nlohmann::json& state) {
  for (auto& d : domains_) {
    const std::string key = "scheduler_state_" + d.domain;
    if (state.is_object() && state.contains(key)) d.iterator.load_state(state[key]);
    else d.iterator.restore(0);
  }
}

}  // namespace roll::pipeline
