#include "roll/workers/engine_from_config.h"

#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/runtime/role.h"
#include "roll/workers/role_config.h"

namespace roll::workers {

at::ScalarType engine_dtype_named(const std::string& name) {
  if (name == "fp32" || name == "float32") return at::kFloat;
  if (name == "bf16" || name == "bfloat16" || name == "fp16" || name == "float16") return at::kBFloat16;
  throw Error("unknown model dtype '" + name + "' (fp32 | bf16)");
}

engine::EngineConfig engine_config_of(const runtime::WorkerContext& ctx) {
  engine::EngineConfig ec;
  ec.num_threads = ctx.threads;
  if (ctx.config) {
    const auto& w = worker_config_of(ctx.config->config, ctx.cluster);
    if (w.strategy_args && w.strategy_args->strategy_config) {
      std::vector<std::string> ignored;
      engine::apply_strategy_config(w.strategy_args->strategy_config, ctx.cluster + ".strategy_args.strategy_config",
                                    ec, &ignored);
      for (const auto& k : ignored) log::debug("{}.strategy_args.strategy_config.{}: no effect here", ctx.cluster, k);
    }
    ec.seed = static_cast<uint64_t>(ctx.config->config.seed);
  }
  const auto& o = ctx.options;
  if (o.contains("num_blocks")) ec.num_blocks = o["num_blocks"].get<int64_t>();
  if (o.contains("max_model_len")) ec.max_model_len = o["max_model_len"].get<int64_t>();
  if (o.contains("block_size")) ec.block_size = o["block_size"].get<int64_t>();
  if (o.contains("max_num_seqs")) ec.max_num_seqs = o["max_num_seqs"].get<int64_t>();
  if (o.contains("warm_up")) ec.warm_up = o["warm_up"].get<bool>();
  return ec;
}

}  // namespace roll::workers
