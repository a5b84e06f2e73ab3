#pragma once
// The terms of one worker's memory (docs/memory.md, "What is counted"): a trainer's parameters,
// gradients, optimizer state and activations, a forward-only worker's weights and activations, the
// engine's weights, KV cache and step buffers. Pure arithmetic over plain inputs, so each term is
// unit-tested against hand-computed values.
#include <cstdint>
#include <string>
#include <vector>

#include "roll/memory/model_size.h"

namespace roll::memory {

// Bytes per element of a model_args.dtype: 4 for fp32, 2 for bf16 and fp16.
int64_t dtype_bytes(const std::string& dtype);

struct Part {
  std::string name;    // "weights", "optimizer state", "activations", "KV cache", ...
  int64_t bytes = 0;
  std::string detail;  // how it was computed, for the table: "bf16, ZeRO-3 shard 1/8"
};

// What the training strategy holds (train/strategy_impl.h): weights in the model dtype, fp32 master
// weights unless the model is fp32, fp32 gradients, AdamW's two fp32 moments; ZeRO shards them
// by stage. LoRA trains only the adapters (fp32 by default) over a frozen base.
struct TrainerInputs {
  ModelSize model;
  int64_t dtype_bytes = 2;
  bool value_head = false;  // critic
  int64_t dp = 1;
  int zero_stage = 0;
  bool offload_optimizer = false;  // accelerators: master weights and moments live in host memory
  bool offload_params = false;     // accelerators, ZeRO-3: the parameter shards too
  int64_t lora_parameters = 0;     // > 0: LoRA; the adapters' parameter count
  int64_t adapter_bytes = 4;       // fp32 adapters (autocast_adapter_dtype), else the model's
};

struct ResidentParts {
  std::vector<Part> device;  // held on the worker's device in every phase
  std::vector<Part> host;    // moved to host memory by offload
};
ResidentParts trainer_resident(const TrainerInputs& in);

// Activations of one training micro-batch of `tokens` tokens in sequences of at most `seq_len`
// (the eager attention's probabilities are [heads, seq, seq] per sequence: tokens x seq_len x
// heads per layer). `flash_attention`: fa2/sdpa on an accelerator keep no [seq, seq] tensor.
struct ActivationInputs {
  ModelSize model;
  int64_t dtype_bytes = 2;
  int64_t tokens = 0;
  int64_t seq_len = 0;
  bool gradient_checkpointing = true;
  bool flash_attention = false;
  bool value_head = false;
  bool frozen_embeddings = false;  // LoRA: no embedding gradient
  int64_t head_chunk = 1024;  // rows of the chunked LM-head log-probs (model/autograd_ops.h)
};
std::vector<Part> train_activations(const ActivationInputs& in);
// A forward without gradients (old and reference log-probs, values): one layer's temporaries at
// a time plus the LM head's chunk.
std::vector<Part> forward_activations(const ActivationInputs& in);

// The engine (engine/engine_core.cpp): weights, the paged KV cache and one step's buffers.
struct EngineInputs {
  ModelSize model;
  int64_t dtype_bytes = 2;
  double gpu_memory_utilization = 0.9;
  int64_t capacity_bytes = 0;     // the device's memory (accelerators) or the node's RAM (CPU)
  bool lazy_kv = false;           // CPU: KV pages are resident only once written
  int64_t block_size = 16;
  int64_t max_model_len = 0;
  int64_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 8192;
  int64_t sequences_over_run = 0;  // CPU: sequences this worker generates in the whole run
  int64_t sequences_in_flight = 0; // CPU: sequences a step gives this worker at once (0: max_num_seqs)
  int64_t prompt_length = 0;       // CPU: the prompt tokens each of them prefills
  int64_t seq_len = 0;             // the longest a sequence gets (prompt + response)
  int64_t lora_base_copy_parameters = 0;  // LoRA: the adapted modules' base weights kept for merging
  // Accelerators (vLLM's gpu_memory_utilization budgets the whole engine): what else of the engine
  // comes out of the share before the KV cache (its context, one step's buffers). 0 on CPU, where
  // rollcpp's engine takes the share minus the weights.
  bool budget_includes_step = false;
  int64_t process_bytes = 0;
};
struct EngineParts {
  std::vector<Part> resident;   // weights, KV cache
  std::vector<Part> step;       // one engine step's buffers
  int64_t kv_blocks = 0;        // blocks the cache reserves
  int64_t concurrent_sequences = 0;  // full-length sequences the reserved cache holds
};
EngineParts engine_memory(const EngineInputs& in);

}  // namespace roll::memory
