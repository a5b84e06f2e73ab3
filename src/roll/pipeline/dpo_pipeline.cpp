#include "roll/pipeline/dpo_pipeline.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <map>
#include <optional>

#include "roll/config/model_path.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/pipeline/data/dpo_data.h"
#include "roll/pipeline/data/epoch_batches.h"
#include "roll/workers/metrics_json.h"
#include "roll/workers/rpc_methods.h"

namespace roll::pipeline {

struct DpoPipeline::Impl {
  std::optional<SftEncoder> encoder;
  DpoDataset train, validation;
  int64_t dp = 1;
  int64_t global_pairs = 0;  // pairs per step
  int64_t epochs = 1;
  int64_t val_pairs = 0;  // pairs per validation batch
  EpochBatches batches;
};

DpoPipeline::DpoPipeline(config::LoadedConfig loaded, config::LoadRequest request, PipelineOptions options)
    : PipelineBase(std::move(loaded), std::move(request), std::move(options)), impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  config::PipelineConfig& c = loaded_.config;
  const std::string model_dir = config::resolve_model_path(c.actor_train.model_args.model_name_or_path.value_or(""),
                                                           "actor_train.model_args.model_name_or_path");
  im.encoder.emplace(model_dir, dpo_encoding_options(c));
  im.train = load_dpo_dataset(expand_data_files(c.actor_train.data_args->file_name, "actor_train.data_args.file_name"),
                              *im.encoder, c.chosen_key, c.rejected_key);

  const config::ClusterPlacement* placement = plan_.find("actor_train");
  if (!placement || placement->workers.empty()) throw Error("the placement plan has no actor_train workers");
  im.dp = static_cast<int64_t>(placement->workers.size());
  const config::TrainingArguments& ta = c.actor_train.training_args;
  // per_device_train_batch_size is already doubled into rows (derive): a row is half a pair.
  im.global_pairs = im.dp * ta.gradient_accumulation_steps * (ta.per_device_train_batch_size / 2);
  const auto pairs = static_cast<int64_t>(im.train.pairs.size());
  if (im.global_pairs < 1 || pairs < im.global_pairs)
    throw ConfigError("actor_train.data_args.file_name",
                      fmt::format("actor_train.data_args.file_name: {} preference pair(s) are fewer than one global "
                                  "batch of {} (data parallel {} x gradient_accumulation_steps {} x "
                                  "per_device_train_batch_size {})",
                                  pairs, im.global_pairs, im.dp, ta.gradient_accumulation_steps,
                                  ta.per_device_train_batch_size / 2));
  im.batches = EpochBatches(pairs, im.global_pairs, c.seed);
  // ROLL: for epoch in range(int(num_train_epochs)), stopping at max_steps.
  im.epochs = std::max<int64_t>(1, static_cast<int64_t>(std::floor(ta.num_train_epochs)));
  const int64_t steps = std::min(c.max_steps, im.epochs * im.batches.steps_per_epoch());
  if (steps < c.max_steps) {
    log::warn("dpo: num_train_epochs {} of {} pair(s) end after {} step(s), before max_steps {}", ta.num_train_epochs,
              pairs, steps, c.max_steps);
    c.max_steps = steps;
    request_.compose.overrides.push_back(fmt::format("max_steps={}", steps));
  }
  log::info("dpo: {} preference pairs, global batch {} pairs (data parallel {} x gradient accumulation {} x {}): {} "
            "steps per epoch, {} steps; beta {}, {}",
            pairs, im.global_pairs, im.dp, ta.gradient_accumulation_steps, ta.per_device_train_batch_size / 2,
            im.batches.steps_per_epoch(), c.max_steps, c.beta,
            c.ipo ? std::string("IPO loss") : fmt::format("sigmoid loss, label_smoothing {}", c.label_smoothing));

  if (c.validation && c.validation->data_args && !c.validation->data_args->file_name.empty()) {
    im.validation = load_dpo_dataset(
        expand_data_files(c.validation->data_args->file_name, "validation.data_args.file_name"), *im.encoder,
        c.chosen_key, c.rejected_key);
    im.val_pairs = validation_batch_rows(
        static_cast<int64_t>(im.validation.pairs.size()), im.dp,
        im.dp * ta.gradient_accumulation_steps * std::max<int64_t>(1, c.actor_train.infer_batch_size / 2), "dpo");
  }
}

DpoPipeline::~DpoPipeline() = default;

std::string DpoPipeline::role_of(const std::string& cluster) const {
  return cluster == "actor_train" ? "dpo_train" : PipelineBase::role_of(cluster);
}

bool DpoPipeline::has_validation() const { return !impl_->validation.pairs.empty(); }

namespace {

// The reference's log-probs of both responses of every pair, then `method` of actor_train on the
// batch; the two calls' metrics with time/cal_ref_log_probs and time/actor_train.
Metrics dpo_call(runtime::Cluster& reference, runtime::Cluster& actor, const char* method, Batch batch,
                 const std::string& time_prefix) {
  auto t0 = std::chrono::steady_clock::now();
  Batch forward = batch.select({"input_ids", "attention_mask", "position_ids", "response_mask"}, {});
  runtime::Payload ref =
      reference.call(workers::rpc::kComputeLogProbs, runtime::Dispatch::dp_mp_compute, runtime::Payload(forward)).get();
  batch.set_tensor("ref_log_probs", ref.batch->tensor("log_probs"));
  Metrics m;
  m[time_prefix + "cal_ref_log_probs"] = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  runtime::Payload r = actor.call(method, runtime::Dispatch::dp_mp_compute, runtime::Payload(std::move(batch))).get();
  for (auto& [k, v] : workers::metrics_from_json(r.batch->meta.value("metrics", nlohmann::json::object()),
                                                 fmt::format("{}.{}", actor.name(), method))
                          .reduce())
    m[k] = v;
  m[time_prefix + "actor_train"] = seconds_since(t0);
  return m;
}

}  // namespace

Metrics DpoPipeline::run_step(int64_t step) {
  Impl& im = *impl_;
  const int64_t epoch = im.batches.epoch_of(step);
  std::vector<const DpoPair*> pairs;
  for (int64_t r : im.batches.rows_of_step(step)) pairs.push_back(&im.train.pairs[static_cast<size_t>(r)]);
  Batch batch = collate_dpo(pairs, *config().sequence_length, im.encoder->pad_id());
  batch.meta["global_step"] = step;
  Metrics m = dpo_call(cluster("reference"), cluster("actor_train"), workers::rpc::kTrainStep, std::move(batch), "time/");
  m["system/epoch"] = static_cast<double>(epoch);
  return m;
}

Metrics DpoPipeline::validate(int64_t step) {
  Impl& im = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  const auto rows = static_cast<int64_t>(im.validation.pairs.size());
  std::map<std::string, std::vector<double>> per_batch;
  for (int64_t begin = 0; begin + im.val_pairs <= rows; begin += im.val_pairs) {
    std::vector<const DpoPair*> part;
    for (int64_t k = begin; k < begin + im.val_pairs; ++k) part.push_back(&im.validation.pairs[static_cast<size_t>(k)]);
    Batch batch = collate_dpo(part, *config().sequence_length, im.encoder->pad_id());
    batch.meta["global_step"] = step;
    const Metrics got = dpo_call(cluster("reference"), cluster("actor_train"), workers::rpc::kValStep, std::move(batch),
                                 "time/val/");
    for (const char* key : {"actor/loss", "actor/acc", "actor/chosen_reward", "actor/reject_reward"}) {
      auto it = got.find(key);
      if (it == got.end())
        throw Error(fmt::format("actor_train.{} at step {} returned no {}", workers::rpc::kValStep, step, key));
      per_batch[key].push_back(it->second);
    }
  }
  // The batches hold equal numbers of pairs: their mean is the mean over the validated pairs.
  Metrics m;
  for (const auto& [key, values] : per_batch) {
    double sum = 0;
    for (double v : values) sum += v;
    m["val/" + key] = sum / static_cast<double>(values.size());
  }
  m["time/val_step"] = seconds_since(t0);
  log::info("validation step {}: val/actor/acc {:.4f}, val/actor/loss {:.4f} over {} pairs", step, m["val/actor/acc"],
            m["val/actor/loss"], rows / im.val_pairs * im.val_pairs);
  return m;
}

std::string DpoPipeline::progress_postfix(const Metrics& m) const {
  const Impl& im = *impl_;
  std::string text = fmt::format("epoch {}/{}", static_cast<int64_t>(m.count("system/epoch") ? m.at("system/epoch") : 0) + 1,
                                 im.epochs);
  for (const char* key : {"actor/loss", "actor/acc", "val/actor/acc"})
    if (auto it = m.find(key); it != m.end()) text += fmt::format(", {} {:.4g}", key, it->second);
  return text;
}

nlohmann::json DpoPipeline::state_kv() const { return {{"dpo_data", impl_->batches.state()}}; }

void DpoPipeline::restore_kv(const nlohmann::json& kv) {
  impl_->batches.warn_if_changed(kv.value("dpo_data", nlohmann::json::object()), "dpo");
}

}  // namespace roll::pipeline
