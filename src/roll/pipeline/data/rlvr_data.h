#pragma once
// The RLVR pipeline's prompts from a config (docs/pipelines.md):
//   training    actor_train.data_args.file_name, encoded (prompt_dataset.h) with the template
//               global_template, else actor_train.data_args.template, per tag tag_to_template; tags
//               mapped to domains by rewards.<domain>.tag_included; split per domain of
//               domain_interleave_probs (in its YAML order); rows of other domains are not used.
//   per step    split_batch(domain_interleave_probs, rollout_batch_size) prompts of each domain
//               (ratios as given, not normalised, as ROLL's pipeline), drawn by one DatasetIterator
//               per domain seeded with `seed`. Each domain must have rows, and more rows than its
//               prompts per step (ROLL's assert), else a roll::Error naming the domain and numbers.
//   validation  validation.data_args.file_name with the same encoding (the training template,
//               columns and prompt_length, as ROLL), every row, in file order.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "roll/core/batch.h"
#include "roll/pipeline/data/dataset_iterator.h"
#include "roll/pipeline/data/prompt_dataset.h"

namespace roll::config {
struct PipelineConfig;
}

namespace roll::pipeline {

// The encoding the config asks for (template names, column names, prompt_length, tag -> domain).
PromptEncodingOptions rlvr_encoding_options(const config::PipelineConfig& config);

struct DomainPrompts {
  std::string domain;
  std::vector<PromptRow> rows;
  int64_t batch_size = 0;  // prompts per step
  DatasetIterator iterator;
};

class RlvrPromptData {
 public:
  // The tokenizer and templates of `tokenizer_dir` (the actor's model directory).
  static RlvrPromptData load(const config::PipelineConfig& config, const std::string& tokenizer_dir);
  // Same, from actor_train.model_args.model_name_or_path (resolved as config/model_path.h does).
  static RlvrPromptData load(const config::PipelineConfig& config);

  const std::vector<DomainPrompts>& domains() const { return domains_; }
  const DomainPrompts& domain(const std::string& name) const;  // roll::Error naming the known domains

  // The next batch_size (or n) prompts of `domain`, collated to prompt_length.
  Batch next_batch(const std::string& domain);
  Batch next_batch(const std::string& domain, int64_t n);

  bool has_validation() const { return !validation_.empty(); }
  const std::vector<PromptRow>& validation_rows() const { return validation_; }
  Batch validation_batch() const;  // every validation row

  // {"scheduler_state_<domain>": {"dataset_iter_count": n}, ...}, the keys ROLL keeps in
  // WorkerState.kv; restore() puts every iterator back (a domain missing from `state` starts afresh).
  nlohmann::json state() const;
  void restore(const nlohmann::json& state);

  const PromptLoadStats& train_stats() const { return train_stats_; }
  const PromptLoadStats& validation_stats() const { return validation_stats_; }
  int64_t prompt_length() const { return prompt_length_; }
  int32_t pad_id() const { return pad_id_; }

 private:
  RlvrPromptData() = default;
  DomainPrompts& mutable_domain(const std::string& name);

  std::vector<DomainPrompts> domains_;
  std::vector<PromptRow> validation_;
  PromptLoadStats train_stats_, validation_stats_;
  int64_t prompt_length_ = 0;
  int32_t pad_id_ = 0;
};

// Collates rows (pointers into a dataset) with their tokens and fields.
Batch collate_rows(const std::vector<const PromptRow*>& rows, int64_t prompt_length, int32_t pad_id);

}  // namespace roll::pipeline
