#pragma once
// What the trainer role bindings share (actor_train_role.cpp, critic_role.cpp, reference_role.cpp,
// sft_train_role.cpp): the job's config, the role's data-parallel group, the Batch of a call, and
// the checkpoint methods every trainer binds.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "roll/config/schema.h"
#include "roll/core/batch.h"
#include "roll/runtime/role.h"
#include "roll/runtime/rpc_server.h"
#include "roll/workers/rpc_methods.h"

namespace roll::comm {
class ProcessGroup;
}

namespace roll::workers {

// The job's config; a roll::Error naming the worker when the driver sent none.
const config::PipelineConfig& pipeline_of(const runtime::WorkerContext& ctx);

// The role's data-parallel group (null for one rank): every rank of the cluster joins it.
std::shared_ptr<comm::ProcessGroup> dp_group(const runtime::WorkerContext& ctx);

// The Batch a method was called with; a roll::Error naming the method when it has none.
const Batch& need_batch(const runtime::Payload& p, const char* method);

// <output_dir>/<cluster>: ROLL's worker_name is the role's name, shared by its ranks, which
// write one checkpoint together (rank 0 the HF weights, every rank its train state).
std::string checkpoint_root(const runtime::WorkerContext& ctx, const runtime::Payload& p);

// do_checkpoint / load_checkpoint {output_dir, step} of a trainer, under checkpoint_root.
template <typename Trainer>
void bind_checkpoints(runtime::RpcServer& s, const runtime::WorkerContext& ctx, Trainer& trainer) {
  using runtime::Payload;
  s.on_call(rpc::kDoCheckpoint, [&ctx, &trainer](Payload p) {
    return Payload(nlohmann::json{{"dir", trainer.save_checkpoint(checkpoint_root(ctx, p), p.args.at("step").get<int64_t>())}});
  });
  s.on_call(rpc::kLoadCheckpoint, [&ctx, &trainer](Payload p) {
    trainer.load_checkpoint(fmt::format("{}/checkpoint-{}", checkpoint_root(ctx, p), p.args.at("step").get<int64_t>()));
    return Payload();
  });
}

}  // namespace roll::workers
