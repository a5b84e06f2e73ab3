#include "roll/workers/trainer_binding.h"

#include <algorithm>
#include <chrono>

#include "roll/comm/process_group.h"
#include "roll/core/error.h"

namespace roll::workers {

const config::PipelineConfig& pipeline_of(const runtime::WorkerContext& ctx) {
  if (!ctx.config) throw Error("worker " + ctx.worker_name + ": the " + ctx.cluster + " role needs the job's config");
  return ctx.config->config;
}

std::shared_ptr<comm::ProcessGroup> dp_group(const runtime::WorkerContext& ctx) {
  if (ctx.world_size <= 1) return nullptr;
  comm::GroupOptions go;
  go.name = ctx.cluster + "_dp";
  go.timeout = std::chrono::seconds(std::max<int64_t>(60, pipeline_of(ctx).rpc_timeout));
  return comm::ProcessGroup::create(ctx.store, ctx.rank, ctx.world_size, go);
}

const Batch& need_batch(const runtime::Payload& p, const char* method) {
  if (!p.batch) throw Error(std::string(method) + " needs a Batch");
  return *p.batch;
}

std::string checkpoint_root(const runtime::WorkerContext& ctx, const runtime::Payload& p) {
  return p.args.at("output_dir").get<std::string>() + "/" + ctx.cluster;
}

}  // namespace roll::workers
