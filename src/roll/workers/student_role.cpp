// The student role of a distillation pipeline (ROLL's distill StudentWorker): a DistillTrainer
// behind the RPC server. The methods it binds, and their payloads, are in rpc_methods.h.
#include "roll/core/log.h"
#include "roll/train/strategy.h"
#include "roll/workers/distill_trainer.h"
#include "roll/workers/register_roles.h"
#include "roll/workers/role_config.h"
#include "roll/workers/trainer_binding.h"

namespace roll::workers {
namespace {

using runtime::Payload;

class StudentRole : public runtime::Role {
 public:
  explicit StudentRole(runtime::WorkerContext& ctx)
      : ctx_(ctx),
        student_(pipeline_of(ctx), worker_config_of(pipeline_of(ctx), ctx.cluster), model_dir_of(ctx), ctx.rank,
             ctx.world_size, dp_group(ctx)) {
    log::info("{}: {}", ctx.worker_name, student_.strategy().describe());
  }

  void bind(runtime::RpcServer& s) override {
    s.on_call(rpc::kTrainStep, [this](Payload p) { return Payload(student_.train_step(need_batch(p, rpc::kTrainStep))); });
    s.on_call(rpc::kValStep, [this](Payload p) { return Payload(student_.val_step(need_batch(p, rpc::kValStep))); });
    bind_checkpoints(s, ctx_, student_);
  }

 private:
  runtime::WorkerContext& ctx_;
  DistillTrainer student_;
};

}  // namespace

void register_student_role() {
  runtime::register_role("student", [](runtime::WorkerContext& c) { return std::make_unique<StudentRole>(c); });
}

}  // namespace roll::workers
