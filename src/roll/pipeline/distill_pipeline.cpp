#include "roll/pipeline/distill_pipeline.h"

#include <fmt/format.h>

#include <chrono>
#include <optional>

#include "roll/config/model_path.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/pipeline/data/epoch_batches.h"
#include "roll/pipeline/data/sft_data.h"
#include "roll/workers/metrics_json.h"
#include "roll/workers/rpc_methods.h"

namespace roll::pipeline {

struct DistillPipeline::Impl {
  std::optional<SftEncoder> encoder;
  SftDataset train, validation;
  SftStepPlan plan;
  int64_t dp = 1;
  int64_t val_batch = 0;
  EpochBatches batches;
};

namespace {

// ROLL's distill encode function: user turn = (prompt + "\n" +) question, assistant turn = answer.
SftEncodingOptions distill_encoding_options(const config::PipelineConfig& c) {
  SftEncodingOptions o;
  const auto& data = c.student.data_args;
  o.template_name = c.global_template ? *c.global_template : data ? data->template_name : "native";
  if (c.prompt_key) {
    o.prompt_key = *c.prompt_key;
    o.query_key = c.question_key;
  } else {
    o.prompt_key = c.question_key;
  }
  o.response_key = c.answer_key;
  o.system_key = c.system_key;
  o.sequence_length = c.sequence_length.value_or(2048);
  return o;
}

// distill_on_prompt: every token is trained (and distilled), the prompt's too.
void train_on_prompts(SftDataset& d) {
  for (auto& row : d.rows) std::fill(row.target.begin(), row.target.end(), 1);
}

// teacher_forward on the rows, then `method` of the student; both calls' metrics and times.
Metrics distill_call(runtime::Cluster& teacher, runtime::Cluster& student, const char* method, Batch batch,
                     const std::string& time_prefix) {
  auto t0 = std::chrono::steady_clock::now();
  Batch forward = batch.select({"input_ids", "attention_mask", "position_ids", "labels"}, {});
  runtime::Payload t =
      teacher.call(workers::rpc::kTeacherForward, runtime::Dispatch::dp_mp_compute, runtime::Payload(forward)).get();
  for (const char* key : {"teacher_log_probs", "teacher_inf_mask", "teacher_indices"})
    if (t.batch->has_tensor(key)) batch.set_tensor(key, t.batch->tensor(key));
  Metrics m;
  m[time_prefix + "teacher_forward"] = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  runtime::Payload r = student.call(method, runtime::Dispatch::dp_mp_compute, runtime::Payload(std::move(batch))).get();
  for (auto& [k, v] : workers::metrics_from_json(r.batch->meta.value("metrics", nlohmann::json::object()),
                                                 fmt::format("{}.{}", student.name(), method))
                          .reduce())
    m[k] = v;
  m[time_prefix + "student_train_step"] = seconds_since(t0);
  return m;
}

}  // namespace

DistillPipeline::DistillPipeline(config::LoadedConfig loaded, config::LoadRequest request, PipelineOptions options)
    : PipelineBase(std::move(loaded), std::move(request), std::move(options)), impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  config::PipelineConfig& c = loaded_.config;
  const std::string model_dir = config::resolve_model_path(c.student.model_args.model_name_or_path.value_or(""),
                                                           "student.model_args.model_name_or_path");
  im.encoder.emplace(model_dir, distill_encoding_options(c));
  im.train = load_sft_dataset(expand_data_files(c.student.data_args->file_name, "student.data_args.file_name"),
                              *im.encoder);
  if (c.distill_on_prompt) train_on_prompts(im.train);

  const config::ClusterPlacement* placement = plan_.find("student");
  if (!placement || placement->workers.empty()) throw Error("the placement plan has no student workers");
  im.dp = static_cast<int64_t>(placement->workers.size());
  const config::TrainingArguments& ta = c.student.training_args;
  im.plan = plan_sft_steps(c.max_steps, static_cast<int64_t>(im.train.rows.size()), im.dp,
                           ta.per_device_train_batch_size, ta.gradient_accumulation_steps, ta.num_train_epochs,
                           "student");
  c.max_steps = im.plan.pipeline_steps;
  c.student.training_args.max_steps = im.plan.worker_max_steps;
  request_.compose.overrides.push_back(fmt::format("max_steps={}", im.plan.pipeline_steps));
  request_.compose.overrides.push_back(fmt::format("student.training_args.max_steps={}", im.plan.worker_max_steps));
  im.batches = EpochBatches(static_cast<int64_t>(im.train.rows.size()), im.plan.global_batch, c.seed);
  log::info("distill: {} examples, global batch {} (data parallel {} x {} x gradient accumulation {}): {} steps; "
            "{} with top-{} teacher logits, distill_loss_weight {}",
            im.train.rows.size(), im.plan.global_batch, im.dp, ta.per_device_train_batch_size,
            ta.gradient_accumulation_steps, im.plan.pipeline_steps, c.kd_objective, c.logits_topk,
            c.distill_loss_weight);

  if (c.validation && c.validation->data_args && !c.validation->data_args->file_name.empty()) {
    im.validation = load_sft_dataset(
        expand_data_files(c.validation->data_args->file_name, "validation.data_args.file_name"), *im.encoder);
    if (c.distill_on_prompt) train_on_prompts(im.validation);
    im.val_batch = validation_batch_rows(
        static_cast<int64_t>(im.validation.rows.size()), im.dp,
        im.dp * ta.gradient_accumulation_steps * std::max<int64_t>(1, c.student.infer_batch_size), "distill");
  }
}

DistillPipeline::~DistillPipeline() = default;

bool DistillPipeline::has_validation() const { return !impl_->validation.rows.empty(); }

Metrics DistillPipeline::run_step(int64_t step) {
  Impl& im = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t epoch = im.batches.epoch_of(step);
  std::vector<const SftSample*> rows;
  for (int64_t r : im.batches.rows_of_step(step)) rows.push_back(&im.train.rows[static_cast<size_t>(r)]);
  Batch batch = collate_sft(rows, im.encoder->options().sequence_length, im.encoder->pad_id());
  batch.meta["global_step"] = step;
  Metrics m = distill_call(cluster("teacher"), cluster("student"), workers::rpc::kTrainStep, std::move(batch), "train/");
  m["train/step_train"] = seconds_since(t0);
  m["system/epoch"] = static_cast<double>(epoch);
  return m;
}

Metrics DistillPipeline::validate(int64_t step) {
  Impl& im = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  const auto rows = static_cast<int64_t>(im.validation.rows.size());
  double ce = 0, kd = 0;
  int64_t batches = 0;
  for (int64_t begin = 0; begin + im.val_batch <= rows; begin += im.val_batch, ++batches) {
    std::vector<const SftSample*> part;
    for (int64_t k = begin; k < begin + im.val_batch; ++k) part.push_back(&im.validation.rows[static_cast<size_t>(k)]);
    Batch batch = collate_sft(part, im.encoder->options().sequence_length, im.encoder->pad_id());
    batch.meta["global_step"] = step;
    const Metrics got =
        distill_call(cluster("teacher"), cluster("student"), workers::rpc::kValStep, std::move(batch), "val/");
    for (const char* key : {"student/val_loss@sum", "student/val_distill_loss@sum"})
      if (!got.count(key))
        throw Error(fmt::format("student.{} at step {} returned no {}", workers::rpc::kValStep, step, key));
    ce += got.at("student/val_loss@sum");
    kd += got.at("student/val_distill_loss@sum");
  }
  const double n = static_cast<double>(std::max<int64_t>(1, batches));
  Metrics m{{"student/val_loss", ce / n}, {"student/val_distill_loss", kd / n}, {"time/val", seconds_since(t0)}};
  log::info("validation step {}: student/val_loss {:.4f}, student/val_distill_loss {:.4f}", step, ce / n, kd / n);
  return m;
}

std::string DistillPipeline::progress_postfix(const Metrics& m) const {
  std::string text = fmt::format("epoch {}/{}", static_cast<int64_t>(m.count("system/epoch") ? m.at("system/epoch") : 0) + 1,
                                 impl_->plan.epochs);
  for (const std::string key : {"train/loss@sum", "train/train_distill_loss@sum", "student/val_distill_loss"})
    if (auto it = m.find(key); it != m.end()) text += fmt::format(", {} {:.4g}", key.substr(0, key.find('@')), it->second);
  return text;
}

nlohmann::json DistillPipeline::state_kv() const { return {{"distill_data", impl_->batches.state()}}; }

void DistillPipeline::restore_kv(const nlohmann::json& kv) {
  impl_->batches.warn_if_changed(kv.value("distill_data", nlohmann::json::object()), "distill");
}

}  // namespace roll::pipeline
