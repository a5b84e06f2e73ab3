// The critic role (docs/runtime.md): a CriticTrainer behind the RPC server.
// The methods it binds, and their payloads, are in rpc_methods.h.
#include "roll/workers/critic_trainer.h"
#include "roll/workers/register_roles.h"
#include "roll/workers/role_config.h"
#include "roll/workers/trainer_binding.h"

namespace roll::workers {
namespace {

using runtime::Payload;

class CriticRole : public runtime::Role {
 public:
  explicit CriticRole(runtime::WorkerContext& ctx)
      : ctx_(ctx),
        critic_(pipeline_of(ctx), worker_config_of(pipeline_of(ctx), ctx.cluster), model_dir_of(ctx), ctx.rank,
                ctx.world_size, dp_group(ctx)) {}

  void bind(runtime::RpcServer& s) override {
    s.on_call(rpc::kComputeValues,
              [this](Payload p) { return Payload(critic_.compute_values(need_batch(p, rpc::kComputeValues))); });
    s.on_call(rpc::kTrainStep,
              [this](Payload p) { return Payload(critic_.train_step(need_batch(p, rpc::kTrainStep))); });
    bind_checkpoints(s, ctx_, critic_);
  }

 private:
  runtime::WorkerContext& ctx_;
  CriticTrainer critic_;
};

}  // namespace

void register_critic_role() {
  runtime::register_role("critic", [](runtime::WorkerContext& c) { return std::make_unique<CriticRole>(c); });
}

}  // namespace roll::workers
