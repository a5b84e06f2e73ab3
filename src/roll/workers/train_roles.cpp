// The training-side roles hosted by worker processes (spec 1.2): actor_train (ActorTrainer),
// critic (CriticTrainer), reference (ReferenceRole) and sft_train (SftTrainer). The methods each
// binds, and their payloads, are in rpc_methods.h.
#include <fmt/format.h>

#include <map>

#include "roll/comm/process_group.h"
#include "roll/comm/store.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/runtime/role.h"
#include "roll/runtime/rpc_server.h"
#include "roll/train/strategy.h"
#include "roll/workers/actor_role.h"
#include "roll/workers/critic_role.h"
#include "roll/workers/reference_role.h"
#include "roll/workers/register_roles.h"
#include "roll/workers/role_config.h"
#include "roll/workers/rpc_methods.h"
#include "roll/workers/sft_role.h"
#include "roll/workers/weight_sync.h"

namespace roll::workers {
namespace {

using runtime::Payload;

const config::PipelineConfig& pipeline_of(const runtime::WorkerContext& ctx) {
  if (!ctx.config) throw Error("worker " + ctx.worker_name + ": the " + ctx.cluster + " role needs the job's config");
  return ctx.config->config;
}

// The role's data-parallel group (null for one rank): every rank of the cluster joins it.
std::shared_ptr<comm::ProcessGroup> dp_group(const runtime::WorkerContext& ctx) {
  if (ctx.world_size <= 1) return nullptr;
  comm::GroupOptions go;
  go.name = ctx.cluster + "_dp";
  go.timeout = std::chrono::seconds(std::max<int64_t>(60, pipeline_of(ctx).rpc_timeout));
  return comm::ProcessGroup::create(ctx.store, ctx.rank, ctx.world_size, go);
}

Payload batch_result(Batch b) { return Payload(std::move(b)); }

const Batch& need_batch(const Payload& p, const char* method) {
  if (!p.batch) throw Error(std::string(method) + " needs a Batch");
  return *p.batch;
}

// <output_dir>/<cluster>: ROLL's worker_name is the role's name, shared by its ranks, which
// write one checkpoint together (rank 0 the HF weights, every rank its train state).
std::string checkpoint_root(const runtime::WorkerContext& ctx, const Payload& p) {
  return p.args.at("output_dir").get<std::string>() + "/" + ctx.cluster;
}

// do_checkpoint / load_checkpoint {output_dir, step} of a trainer, under checkpoint_root.
template <typename Trainer>
void bind_checkpoints(runtime::RpcServer& s, const runtime::WorkerContext& ctx, Trainer& trainer) {
  s.on_call(rpc::kDoCheckpoint, [&ctx, &trainer](Payload p) {
    return Payload(nlohmann::json{{"dir", trainer.save_checkpoint(checkpoint_root(ctx, p), p.args.at("step").get<int64_t>())}});
  });
  s.on_call(rpc::kLoadCheckpoint, [&ctx, &trainer](Payload p) {
    trainer.load_checkpoint(fmt::format("{}/checkpoint-{}", checkpoint_root(ctx, p), p.args.at("step").get<int64_t>()));
    return Payload();
  });
}

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
              [this](Payload p) { return batch_result(actor_.train_step(need_batch(p, rpc::kTrainStep))); });
    s.on_call(rpc::kComputeLogProbs,
              [this](Payload p) { return batch_result(actor_.compute_log_probs(need_batch(p, rpc::kComputeLogProbs))); });
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
        if (p.args.contains("shm_dir")) out["file"] = write_weights_file(p.args["shm_dir"].get<std::string>(), full);
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
};

class CriticRole : public runtime::Role {
 public:
  explicit CriticRole(runtime::WorkerContext& ctx)
      : ctx_(ctx),
        critic_(pipeline_of(ctx), worker_config_of(pipeline_of(ctx), ctx.cluster), model_dir_of(ctx), ctx.rank,
                ctx.world_size, dp_group(ctx)) {}

  void bind(runtime::RpcServer& s) override {
    s.on_call(rpc::kComputeValues,
              [this](Payload p) { return batch_result(critic_.compute_values(need_batch(p, rpc::kComputeValues))); });
    s.on_call(rpc::kTrainStep,
              [this](Payload p) { return batch_result(critic_.train_step(need_batch(p, rpc::kTrainStep))); });
    bind_checkpoints(s, ctx_, critic_);
  }

 private:
  runtime::WorkerContext& ctx_;
  CriticTrainer critic_;
};

class ReferenceWorkerRole : public runtime::Role {
 public:
  explicit ReferenceWorkerRole(runtime::WorkerContext& ctx)
      : reference_(pipeline_of(ctx), worker_config_of(pipeline_of(ctx), ctx.cluster), model_dir_of(ctx)) {}

  void bind(runtime::RpcServer& s) override {
    s.on_call(rpc::kComputeLogProbs,
              [this](Payload p) { return batch_result(reference_.compute_log_probs(need_batch(p, rpc::kComputeLogProbs))); });
  }

 private:
  ReferenceRole reference_;
};

class SftTrainRole : public runtime::Role {
 public:
  explicit SftTrainRole(runtime::WorkerContext& ctx)
      : ctx_(ctx),
        sft_(pipeline_of(ctx), worker_config_of(pipeline_of(ctx), ctx.cluster), model_dir_of(ctx), ctx.rank,
             ctx.world_size, dp_group(ctx)) {
    log::info("{}: {}", ctx.worker_name, sft_.strategy().describe());
  }

  void bind(runtime::RpcServer& s) override {
    s.on_call(rpc::kTrainStep, [this](Payload p) { return batch_result(sft_.train_step(need_batch(p, rpc::kTrainStep))); });
    s.on_call(rpc::kValStep, [this](Payload p) { return batch_result(sft_.val_step(need_batch(p, rpc::kValStep))); });
    bind_checkpoints(s, ctx_, sft_);
  }

 private:
  runtime::WorkerContext& ctx_;
  SftTrainer sft_;
};

}  // namespace

void register_train_roles() {
  runtime::register_role("actor_train", [](runtime::WorkerContext& c) { return std::make_unique<ActorTrainRole>(c); });
  runtime::register_role("critic", [](runtime::WorkerContext& c) { return std::make_unique<CriticRole>(c); });
  runtime::register_role("reference", [](runtime::WorkerContext& c) { return std::make_unique<ReferenceWorkerRole>(c); });
  runtime::register_role("sft_train", [](runtime::WorkerContext& c) { return std::make_unique<SftTrainRole>(c); });
}

}  // namespace roll::workers
