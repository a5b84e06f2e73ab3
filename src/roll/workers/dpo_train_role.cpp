// The dpo_train role: the actor_train cluster of a DPO pipeline (ROLL's dpo ActorWorker), a
// DpoTrainer behind the RPC server. The methods it binds, and their payloads, are in rpc_methods.h.
#include "roll/core/log.h"
#include "roll/train/strategy.h"
#include "roll/workers/dpo_trainer.h"
#include "roll/workers/register_roles.h"
#include "roll/workers/role_config.h"
#include "roll/workers/trainer_binding.h"

namespace roll::workers {
namespace {

using runtime::Payload;

class DpoTrainRole : public runtime::Role {
 public:
  explicit DpoTrainRole(runtime::WorkerContext& ctx)
      : ctx_(ctx),
        dpo_(pipeline_of(ctx), worker_config_of(pipeline_of(ctx), ctx.cluster), model_dir_of(ctx), ctx.rank,
             ctx.world_size, dp_group(ctx)) {
    log::info("{}: {}", ctx.worker_name, dpo_.strategy().describe());
  }

  void bind(runtime::RpcServer& s) override {
    s.on_call(rpc::kTrainStep, [this](Payload p) { return Payload(dpo_.train_step(need_batch(p, rpc::kTrainStep))); });
    s.on_call(rpc::kValStep, [this](Payload p) { return Payload(dpo_.val_step(need_batch(p, rpc::kValStep))); });
    bind_checkpoints(s, ctx_, dpo_);
  }

 private:
  runtime::WorkerContext& ctx_;
  DpoTrainer dpo_;
};

}  // namespace

void register_dpo_train_role() {
  runtime::register_role("dpo_train", [](runtime::WorkerContext& c) { return std::make_unique<DpoTrainRole>(c); });
}

}  // namespace roll::workers
