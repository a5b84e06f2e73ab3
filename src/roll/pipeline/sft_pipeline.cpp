#include "roll/pipeline/sft_pipeline.h"

#include <fmt/format.h>

#include <optional>

#include "roll/config/model_path.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/pipeline/data/epoch_batches.h"
#include "roll/workers/metrics_json.h"
#include "roll/workers/rpc_methods.h"

namespace roll::pipeline {

struct SftPipeline::Impl {
  std::string role;  // the cluster's metric prefix (sft_train)
  std::optional<SftEncoder> encoder;
  SftDataset train, validation;
  SftStepPlan plan;
  int64_t dp = 1;
  int64_t val_batch = 0;  // rows per validation batch
  EpochBatches batches;
};

SftPipeline::SftPipeline(config::LoadedConfig loaded, config::LoadRequest request, PipelineOptions options)
    : PipelineBase(std::move(loaded), std::move(request), std::move(options)), impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  config::PipelineConfig& c = loaded_.config;
  im.role = c.sft_train.name.value_or("sft_train");
  const std::string model_dir = config::resolve_model_path(c.sft_train.model_args.model_name_or_path.value_or(""),
                                                           "sft_train.model_args.model_name_or_path");
  if (!c.sft_train.data_args)
    throw ConfigError("sft_train.data_args.file_name",
                      "sft_train.data_args.file_name: the SFT pipeline needs training data");
  im.encoder.emplace(model_dir, sft_encoding_options(c));
  im.train = load_sft_dataset(expand_data_files(c.sft_train.data_args->file_name, "sft_train.data_args.file_name"),
                              *im.encoder);

  const config::ClusterPlacement* placement = plan_.find("sft_train");
  if (!placement || placement->workers.empty()) throw Error("the placement plan has no sft_train workers");
  im.dp = static_cast<int64_t>(placement->workers.size());
  const config::TrainingArguments& ta = c.sft_train.training_args;
  im.plan = plan_sft_steps(c.max_steps, static_cast<int64_t>(im.train.rows.size()), im.dp,
                           ta.per_device_train_batch_size, ta.gradient_accumulation_steps, ta.num_train_epochs);
  // The workers load the config from the request: the derived step counts travel as overrides.
  c.max_steps = im.plan.pipeline_steps;
  c.sft_train.training_args.max_steps = im.plan.worker_max_steps;
  request_.compose.overrides.push_back(fmt::format("max_steps={}", im.plan.pipeline_steps));
  request_.compose.overrides.push_back(fmt::format("sft_train.training_args.max_steps={}", im.plan.worker_max_steps));
  im.batches = EpochBatches(static_cast<int64_t>(im.train.rows.size()), im.plan.global_batch, c.seed);
  log::info(
      "sft: {} examples, global batch {} (data parallel {} x {} x gradient accumulation {}): {} steps per epoch, "
      "{} epoch(s), {} steps",
      im.train.rows.size(), im.plan.global_batch, im.dp, ta.per_device_train_batch_size, ta.gradient_accumulation_steps,
      im.plan.steps_per_epoch, im.plan.epochs, im.plan.pipeline_steps);

  if (c.validation && c.validation->data_args && !c.validation->data_args->file_name.empty()) {
    // ROLL encodes the validation rows with the training encode function (template, columns).
    im.validation = load_sft_dataset(
        expand_data_files(c.validation->data_args->file_name, "validation.data_args.file_name"), *im.encoder);
    im.val_batch = validation_batch_rows(
        static_cast<int64_t>(im.validation.rows.size()), im.dp,
        im.dp * ta.gradient_accumulation_steps * std::max<int64_t>(1, c.sft_train.infer_batch_size), "sft");
  }
}

SftPipeline::~SftPipeline() = default;

const SftStepPlan& SftPipeline::step_plan() const { return impl_->plan; }

bool SftPipeline::has_validation() const { return !impl_->validation.rows.empty(); }

namespace {

// One DP_MP_COMPUTE call of sft_train on the collated rows; the ranks' metrics reduced.
Metrics sft_call(runtime::Cluster& sft, const char* method, const std::vector<const SftSample*>& rows,
                 const SftEncoder& encoder, int64_t step) {
  Batch batch = collate_sft(rows, encoder.options().sequence_length, encoder.pad_id());
  batch.meta["global_step"] = step;
  runtime::Payload r = sft.call(method, runtime::Dispatch::dp_mp_compute, runtime::Payload(std::move(batch))).get();
  return workers::metrics_from_json(r.batch->meta.value("metrics", nlohmann::json::object()),
                                    fmt::format("{}.{}", sft.name(), method))
      .reduce();
}

}  // namespace

Metrics SftPipeline::run_step(int64_t step) {
  Impl& im = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t epoch = im.batches.epoch_of(step);
  std::vector<const SftSample*> rows;
  for (int64_t r : im.batches.rows_of_step(step)) rows.push_back(&im.train.rows[static_cast<size_t>(r)]);
  Metrics m = sft_call(cluster("sft_train"), workers::rpc::kTrainStep, rows, *im.encoder, step);
  m["time/step_train"] = seconds_since(t0);
  m["system/epoch"] = static_cast<double>(epoch);
  return m;
}

Metrics SftPipeline::validate(int64_t step) {
  Impl& im = *impl_;
  const auto rows = static_cast<int64_t>(im.validation.rows.size());
  double sum = 0;
  int64_t batches = 0;
  for (int64_t begin = 0; begin + im.val_batch <= rows; begin += im.val_batch, ++batches) {
    std::vector<const SftSample*> part;
    for (int64_t k = begin; k < begin + im.val_batch; ++k) part.push_back(&im.validation.rows[static_cast<size_t>(k)]);
    const Metrics got = sft_call(cluster("sft_train"), workers::rpc::kValStep, part, *im.encoder, step);
    auto it = got.find(im.role + "/loss@sum");
    if (it == got.end())
      throw Error(fmt::format("sft_train.{} at step {} returned no {}/loss@sum", workers::rpc::kValStep, step, im.role));
    sum += it->second;
  }
  return {{im.role + "/val_loss", sum / static_cast<double>(std::max<int64_t>(1, batches))}};
}

std::string SftPipeline::progress_postfix(const Metrics& m) const {
  const Impl& im = *impl_;
  std::string text = fmt::format("epoch {}/{}", static_cast<int64_t>(m.count("system/epoch") ? m.at("system/epoch") : 0) + 1,
                                 im.plan.epochs);
  for (const std::string& key : {im.role + "/loss@sum", im.role + "/val_loss"})
    if (auto it = m.find(key); it != m.end()) text += fmt::format(", {} {:.4g}", key.substr(0, key.find('@')), it->second);
  return text;
}

nlohmann::json SftPipeline::state_kv() const { return {{"sft_data", impl_->batches.state()}}; }

void SftPipeline::restore_kv(const nlohmann::json& kv) {
  impl_->batches.warn_if_changed(kv.value("sft_data", nlohmann::json::object()), "sft");
}

}  // namespace roll::pipeline
