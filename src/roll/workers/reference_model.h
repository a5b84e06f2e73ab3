#pragma once
// The reference model (ROLL's `reference` cluster): forward-only log-probs of a frozen policy, for
// hf_infer and the forward-only mappings of megatron_infer / fsdp2_infer / deepspeed_infer (and
// the *_train names, run forward-only: the reference never trains). No optimizer state and no
// process group: the dispatcher splits the batch over the ranks, each computes its share.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "roll/config/schema.h"
#include "roll/core/batch.h"
#include "roll/workers/token_budget.h"

namespace roll::model {
class Transformer;
}

namespace roll::workers {

class ReferenceModel {
 public:
  // Loads `model_dir` in reference.model_args.dtype. A strategy_name outside the list above is a
  // ConfigError naming <role>.strategy_args.strategy_name.
  ReferenceModel(const config::PipelineConfig& pipeline, const config::WorkerConfig& reference,
                const std::string& model_dir);
  ~ReferenceModel();

  // No grad, in infer_batch_size micro-batches (or dynamic ones, use_dynamic_batching_in_infer):
  // log_probs and entropy [B, S-1] × response_mask[:, 1:] in the batch's row order (the pipeline
  // renames log_probs to ref_log_probs, as ROLL).
  Batch compute_log_probs(const Batch& batch);

  const std::string& name() const;  // reference unless the worker config names it
  model::Transformer& model();

 private:
  std::string name_;
  int64_t infer_batch_size_ = 16;
  std::optional<TokenBudget> infer_budget_;
  std::shared_ptr<model::Transformer> model_;
};

}  // namespace roll::workers
