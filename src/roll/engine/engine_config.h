#pragma once
// Settings of the engine, and how ROLL's `vllm`/`sglang` strategy_config keys map onto them
// (docs/config.md). On CPU, "GPU memory" is a host-memory budget: the KV cache gets
// gpu_memory_utilization x budget minus the weights.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "roll/config/node.h"

namespace roll::engine {

struct EngineConfig {
  int64_t block_size = 16;                 // tokens per KV block
  double gpu_memory_utilization = 0.9;     // share of the memory budget for weights + KV cache
  int64_t memory_budget_bytes = 0;         // 0: the device's memory (on CPU: physical RAM)
  int64_t num_blocks = 0;                  // > 0: exactly this many KV blocks (vLLM's num_gpu_blocks_override)
  int64_t max_model_len = 0;               // 0: the model's max_position_embeddings
  bool enable_prefix_caching = true;
  int64_t max_num_batched_tokens = 8192;   // tokens per step; longer prompts are prefilled in chunks
  int64_t max_num_seqs = 256;              // sequences running at once
  uint64_t seed = 0;                       // seeds requests that bring none
  int num_threads = 0;                     // > 0: at::set_num_threads(num_threads)
  bool warm_up = true;                     // run a short request at start so the first real one is not slow
  // Token ids -> text: needed for stop strings and fills SampleOutput::text. Optional.
  std::function<std::string(std::span<const int32_t>)> detokenize;
};

// Applies a `strategy_config` mapping of the vllm or sglang strategy onto `config`. Keys that
// only make sense for a GPU server (enforce_eager, load_format, tensor_parallel_size 1, ...)
// are accepted and ignored; the names of keys with no meaning here are added to `ignored`.
// Bad values (and tensor/pipeline parallel > 1) throw ConfigError naming the key.
void apply_strategy_config(const config::NodePtr& strategy_config, const std::string& key_prefix,
                           EngineConfig& config, std::vector<std::string>* ignored = nullptr);

}  // namespace roll::engine
