// The teacher role (ROLL's distill TeacherWorker): a frozen model that answers teacher_forward with
// its top-k next-token distribution (rl::teacher_topk: logits ÷ kd_temperature ÷
// teacher_temperature, the k largest renormalised) at the positions the student trains on. The
// LM head runs on those positions only. No process group: the dispatcher splits the batch.
#include <ATen/ATen.h>
#include <fmt/format.h>

#include "roll/core/log.h"
#include "roll/model/transformer.h"
#include "roll/rl/distill_loss.h"
#include "roll/workers/forward_batches.h"
#include "roll/workers/register_roles.h"
#include "roll/workers/role_config.h"
#include "roll/workers/role_model.h"
#include "roll/workers/rpc_methods.h"
#include "roll/workers/sft_trainer.h"
#include "roll/workers/trainer_binding.h"

namespace roll::workers {
namespace {

using runtime::Payload;

class TeacherRole : public runtime::Role {
 public:
  explicit TeacherRole(runtime::WorkerContext& ctx) : pipeline_(pipeline_of(ctx)) {
    const config::WorkerConfig& w = worker_config_of(pipeline_, ctx.cluster);
    name_ = role_name(w, "teacher");
    infer_batch_size_ = std::max<int64_t>(1, w.infer_batch_size);
    model_ = load_role_model(model_dir_of(ctx), w, name_);
    log::info("{}: teacher, top-{} logits{}", ctx.worker_name, pipeline_.logits_topk,
              pipeline_.logits_topk == 0 ? " (the whole vocabulary)" : "");
  }

  void bind(runtime::RpcServer& s) override {
    s.on_call(rpc::kTeacherForward, [this](Payload p) { return Payload(forward(need_batch(p, rpc::kTeacherForward))); });
  }

 private:
  Batch forward(const Batch& batch) {
    at::NoGradGuard no_grad;
    const ForwardInputs in = forward_inputs(batch, name_);
    const at::Tensor trained = batch_tensor(batch, "labels", name_) != kIgnoreIndex;
    const int64_t B = batch.size(), T = in.input_ids.size(1);
    const int64_t K = pipeline_.logits_topk > 0 ? pipeline_.logits_topk : model_->config().vocab_size;
    at::Tensor log_probs = at::zeros({B, T, K}, at::kFloat);
    at::Tensor indices = at::zeros({B, T, K}, at::kLong);
    at::Tensor inf_mask = at::zeros({B, T, K}, at::kByte);
    for (const auto& [b, e] : infer_micro_batches(B, infer_batch_size_)) {
      const ForwardInputs part = in.rows(b, e);
      const at::Tensor where = trained.slice(0, b, e);
      if (!where.any().item<bool>()) continue;
      const at::Tensor hidden = model_->hidden_states(part.input_ids, part.attention_mask, part.position_ids);
      const at::Tensor logits = model_->lm_head(hidden.index({where}));
      const rl::TeacherTopK top =
          rl::teacher_topk(logits, pipeline_.logits_topk, pipeline_.kd_temperature, pipeline_.teacher_temperature);
      log_probs.slice(0, b, e).index_put_({where}, top.log_probs.to(at::kFloat));
      inf_mask.slice(0, b, e).index_put_({where}, top.inf_mask.to(at::kByte));
      if (top.indices.defined()) indices.slice(0, b, e).index_put_({where}, top.indices);
    }
    Batch out(B);
    out.set_tensor("teacher_log_probs", log_probs);
    out.set_tensor("teacher_inf_mask", inf_mask);
    if (pipeline_.logits_topk > 0) out.set_tensor("teacher_indices", indices);
    return out;
  }

  const config::PipelineConfig& pipeline_;
  std::string name_;
  int64_t infer_batch_size_ = 1;
  std::shared_ptr<model::Transformer> model_;
};

}  // namespace

void register_teacher_role() {
  runtime::register_role("teacher", [](runtime::WorkerContext& c) { return std::make_unique<TeacherRole>(c); });
}

}  // namespace roll::workers
