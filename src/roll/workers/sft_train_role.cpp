// The sft_train role (ROLL's SFTWorker): an SftTrainer behind the RPC server.
// The methods it binds, and their payloads, are in rpc_methods.h.
#include "roll/core/log.h"
#include "roll/train/strategy.h"
#include "roll/workers/register_roles.h"
#include "roll/workers/role_config.h"
#include "roll/workers/sft_trainer.h"
#include "roll/workers/trainer_binding.h"

namespace roll::workers {
namespace {

using runtime::Payload;

class SftTrainRole : public runtime::Role {
 public:
  explicit SftTrainRole(runtime::WorkerContext& ctx)
      : ctx_(ctx),
        sft_(pipeline_of(ctx), worker_config_of(pipeline_of(ctx), ctx.cluster), model_dir_of(ctx), ctx.rank,
             ctx.world_size, dp_group(ctx)) {
    log::info("{}: {}", ctx.worker_name, sft_.strategy().describe());
  }

  void bind(runtime::RpcServer& s) override {
    s.on_call(rpc::kTrainStep, [this](Payload p) { return Payload(sft_.train_step(need_batch(p, rpc::kTrainStep))); });
    s.on_call(rpc::kValStep, [this](Payload p) { return Payload(sft_.val_step(need_batch(p, rpc::kValStep))); });
    bind_checkpoints(s, ctx_, sft_);
  }

 private:
  runtime::WorkerContext& ctx_;
  SftTrainer sft_;
};

}  // namespace

void register_sft_train_role() {
  runtime::register_role("sft_train", [](runtime::WorkerContext& c) { return std::make_unique<SftTrainRole>(c); });
}

}  // namespace roll::workers
