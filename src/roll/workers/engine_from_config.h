#pragma once
// The engine settings of a worker that serves a model with our engine (actor_infer, an llm_judge
// reward worker): its strategy_config (vllm/sglang keys, engine/engine_config.h), the job's seed,
// the worker's thread count and the test options num_blocks, max_model_len, block_size,
// max_num_seqs and warm_up.
#include <string>

#include <c10/core/ScalarType.h>

#include "roll/engine/engine_config.h"

namespace roll::runtime {
struct WorkerContext;
}

namespace roll::workers {

// model_args.dtype -> the engine's compute dtype: fp32, else bf16 (fp16 runs as bf16 on CPU).
at::ScalarType engine_dtype_named(const std::string& name);
engine::EngineConfig engine_config_of(const runtime::WorkerContext& ctx);

}  // namespace roll::workers
