// The actor_train role (docs/runtime.md): an ActorTrainer behind the RPC server, and the sending side of
// the model update (train rank 0 broadcasts or writes the shared-memory file).
// The methods it binds, and their payloads, are in rpc_methods.h.
#include <fmt/format.h>

#include <chrono>

#include "roll/comm/process_group.h"
#include "roll/comm/store.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/train/strategy.h"
#include "roll/workers/actor_trainer.h"
#include "roll/workers/register_roles.h"
#include "roll/workers/role_config.h"
#include "roll/workers/shared_weights.h"
#include "roll/workers/trainer_binding.h"
#include "roll/workers/weight_sync.h"

namespace roll::workers {
namespace {

using runtime::Payload;

class ActorTrainRole : public runtime::Role {
 public:
  explicit ActorTrainRole(runtime::WorkerContext& ctx)
      : ctx_(ctx),
        actor_(pipeline_of(ctx), worker_config_of(pipeline_of(ctx), ctx.cluster), model_dir_of(ctx), ctx.rank,
               ctx.world_size, dp_group(ctx)) {
    log::info("{}: {}", ctx.worker_name, actor_.strategy().describe());
  }

  void bind(runtime::RpcServer& s) override {
    s.on_call(rpc::kTrainStep,
              [this](Payload p) { return Payload(actor_.train_step(need_batch(p, rpc::kTrainStep))); });
    s.on_call(rpc::kComputeLogProbs,
              [this](Payload p) { return Payload(actor_.compute_log_probs(need_batch(p, rpc::kComputeLogProbs))); });
    s.on_call(rpc::kSetupModelUpdate, [this](Payload p) {
      if (ctx_.rank != 0) return Payload();  // only train rank 0 sends
      update_group_ = join_model_update_group(ctx_.store, p.args, 0);
      return Payload();
    });
    s.on_call(rpc::kBroadcastWeights, [this](Payload p) {
      const auto t0 = std::chrono::steady_clock::now();
      model::NamedTensors full = actor_.strategy().full_parameters();  // collective over the DP ranks
      nlohmann::json out = nlohmann::json::object();
      if (ctx_.rank == 0) {
        if (p.args.contains("group")) {
          if (!update_group_)
            throw Error(fmt::format("{}: {} was not called", rpc::kBroadcastWeights, rpc::kSetupModelUpdate));
          SyncStats st;
          broadcast_weights(*update_group_, 0, &full, p.args.at("bucket_bytes").get<int64_t>(), &st);
          out["bytes"] = st.bytes;
          out["buckets"] = st.buckets;
        }
        if (p.args.contains("shm_file")) {
          const std::string file = p.args["shm_file"].get<std::string>();
          if (!shared_ || shared_->path() != file || !shared_->matches(full)) shared_ = SharedWeights::create(file, full);
          shared_->write(full, p.args.at("version").get<int64_t>());
          out["file"] = file;
        }
      }
      out["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return Payload(out);
    });
    bind_checkpoints(s, ctx_, actor_);
  }

 private:
  runtime::WorkerContext& ctx_;
  ActorTrainer actor_;
  std::shared_ptr<comm::ProcessGroup> update_group_;
  std::shared_ptr<SharedWeights> shared_;  // rank 0's shared-memory copy of the weights, kept between updates
};

}  // namespace

void register_actor_train_role() {
  runtime::register_role("actor_train", [](runtime::WorkerContext& c) { return std::make_unique<ActorTrainRole>(c); });
}

}  // namespace roll::workers
