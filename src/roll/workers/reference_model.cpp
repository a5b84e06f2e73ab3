#include "roll/workers/reference_model.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>

#include "roll/core/error.h"
#include "roll/workers/dynamic_micro_batches.h"
#include "roll/workers/forward_batches.h"
#include "roll/workers/trim_padding.h"
#include "roll/workers/role_model.h"

namespace roll::workers {
namespace {

constexpr const char* kForwardOnly[] = {"hf_infer",       "megatron_infer", "fsdp2_infer",    "deepspeed_infer",
                                        "megatron_train", "fsdp2_train",    "deepspeed_train"};

}  // namespace

ReferenceModel::ReferenceModel(const config::PipelineConfig& pipeline, const config::WorkerConfig& reference,
                             const std::string& model_dir)
    : name_(role_name(reference, "reference")),
      infer_batch_size_(reference.infer_batch_size),
      infer_budget_(infer_token_budget(reference, name_)) {
  const std::string strategy = reference.strategy_args ? reference.strategy_args->strategy_name : "hf_infer";
  if (std::find(std::begin(kForwardOnly), std::end(kForwardOnly), strategy) == std::end(kForwardOnly))
    throw ConfigError(name_ + ".strategy_args.strategy_name",
                      fmt::format("{}.strategy_args.strategy_name '{}' cannot serve reference log-probs; use "
                                  "hf_infer, megatron_infer, fsdp2_infer or deepspeed_infer",
                                  name_, strategy));
  model_ = load_role_model(model_dir, reference, name_);
  model_->set_requires_grad(false);
}

ReferenceModel::~ReferenceModel() = default;

Batch ReferenceModel::compute_log_probs(const Batch& batch) {
  // No process group: each rank plans its own rows (forward-only, so the ranks need not agree).
  const MicroBatchRows micro =
      batch.empty() ? MicroBatchRows{}
                    : forward_micro_batches(batch_tensor(batch, "attention_mask", name_), infer_batch_size_,
                                            infer_budget_, nullptr, name_ + "/compute_log_probs");
  return forward_log_probs(
      batch, micro,
      [&](const ForwardInputs& in) {
        return log_probs_on_used_columns(
            [&](const at::Tensor& ids, const at::Tensor& mask, const at::Tensor& pos, const at::Tensor&) {
              return model_->token_log_probs(ids, mask, pos, /*with_entropy=*/true, /*gradient_checkpointing=*/false,
                                             lm_head_chunk_tokens(model_->config()));
            },
            in.input_ids, in.attention_mask, in.position_ids);
      },
      name_);
}

const std::string& ReferenceModel::name() const { return name_; }
model::Transformer& ReferenceModel::model() { return *model_; }

}  // namespace roll::workers
