#include "roll/memory/worker_memory.h"

#include <fmt/format.h>

#include <algorithm>

namespace roll::memory {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return b <= 0 ? a : (a + b - 1) / b; }

std::string dtype_name(int64_t bytes) { return bytes == 4 ? "fp32" : "bf16"; }

// The MLP width one token passes through: the routed experts' and the shared expert's for MoE.
int64_t mlp_width(const ModelSize& m) {
  return m.moe() ? m.experts_per_token * m.moe_intermediate + m.shared_expert_intermediate : m.intermediate;
}

void add(std::vector<Part>& parts, std::string name, int64_t bytes, std::string detail) {
  if (bytes > 0) parts.push_back({std::move(name), bytes, std::move(detail)});
}

}  // namespace

int64_t dtype_bytes(const std::string& dtype) { return dtype == "fp32" || dtype == "float32" ? 4 : 2; }

ResidentParts trainer_resident(const TrainerInputs& in) {
  ResidentParts r;
  const int64_t b = in.dtype_bytes, dp = std::max<int64_t>(1, in.dp);
  const int z = in.zero_stage;
  const int64_t n = in.model.parameters(in.value_head);
  auto shard = [&](int from_stage) { return z >= from_stage ? dp : 1; };
  auto shard_note = [&](int from_stage) {
    return z >= from_stage && dp > 1 ? fmt::format(", ZeRO-{} shard 1/{}", z, dp) : std::string();
  };
  auto& state = in.offload_optimizer ? r.host : r.device;
  if (in.lora_parameters > 0) {
    const int64_t na = in.lora_parameters, ab = in.adapter_bytes;
    add(r.device, "weights", n * b, fmt::format("{} frozen base, {} parameters", dtype_name(b), n));
    add(r.device, "LoRA adapters", na * ab,
        fmt::format("{}, {} parameters (with the modules additional_target trains whole)", dtype_name(ab), na));
    if (ab != 4) add(state, "master weights", ceil_div(na, shard(1)) * 4, "fp32 adapters" + shard_note(1));
    add(state, "optimizer state", ceil_div(na, shard(1)) * 8, "AdamW moments, fp32" + shard_note(1));
    add(r.device, "gradients", ceil_div(na, shard(2)) * 4, "fp32 adapters" + shard_note(2));
    return r;
  }
  if (z >= 3) {
    auto& params = in.offload_params ? r.host : r.device;
    add(params, "weights", ceil_div(n, dp) * b, fmt::format("{}, {} parameters{}", dtype_name(b), n, shard_note(3)));
    // A gathered layer and the next one's buffer (the strategy's BufferPool).
    add(r.device, "gathered layers", 2 * in.model.largest_layer_parameters() * b, "2 decoder layers, ZeRO-3");
  } else {
    add(r.device, "weights", n * b, fmt::format("{}, {} parameters", dtype_name(b), n));
  }
  if (b != 4) add(state, "master weights", ceil_div(n, shard(1)) * 4, "fp32" + shard_note(1));
  add(state, "optimizer state", ceil_div(n, shard(1)) * 8, "AdamW moments, fp32" + shard_note(1));
  add(r.device, "gradients", ceil_div(n, shard(2)) * 4, "fp32" + shard_note(2));
  if (z >= 2) add(r.device, "gradient buckets", 2 * in.model.largest_layer_parameters() * 4,
                  "a layer's full gradient before reduce-scatter");
  return r;
}

namespace {

// Bytes one token leaves saved for backward in one decoder layer, without the attention scores
// (model/transformer.cpp's layer_forward): the norms' fp32 forms, the projections' inputs, rotated
// q and k, GQA-expanded k and v, the attention output and the four MLP tensors.
int64_t layer_bytes_per_token(const ModelSize& m, int64_t b) {
  const int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  return b * (2 * m.hidden + 5 * q + 2 * kv + 4 * mlp_width(m)) + 16 * m.hidden;
}

// The eager attention per token and layer: fp32 softmax output plus the probabilities and scores in
// the model dtype, over `seq_len` keys and every head.
int64_t attention_bytes_per_token(const ActivationInputs& in) {
  return in.flash_attention ? 0 : in.seq_len * in.model.heads * (4 + 2 * in.dtype_bytes);
}

}  // namespace

std::vector<Part> train_activations(const ActivationInputs& in) {
  std::vector<Part> parts;
  const ModelSize& m = in.model;
  const int64_t b = in.dtype_bytes, t = in.tokens;
  const int64_t layer = t * (layer_bytes_per_token(m, b) + attention_bytes_per_token(in));
  const std::string shape = fmt::format("{} tokens, sequences up to {}", t, in.seq_len);
  if (in.gradient_checkpointing) {
    add(parts, "checkpointed layer inputs", m.layers * t * m.hidden * b, fmt::format("{} layers x {}", m.layers, shape));
    add(parts, "recomputed layer", 2 * layer, "one layer's activations and their gradients");
  } else {
    add(parts, "saved activations", m.layers * layer, fmt::format("{} layers x {}", m.layers, shape));
    add(parts, "backward temporaries", layer, "one layer's gradients");
  }
  if (!in.flash_attention) add(parts, "attention mask", t * in.seq_len * 4, "fp32 [seq, seq] per sequence");
  add(parts, "hidden states", 2 * t * m.hidden * b, "final norm output and its gradient");
  if (!in.value_head) {
    const int64_t chunk = std::min(t, in.head_chunk);
    add(parts, "LM-head gradient", m.vocab * m.hidden * (4 + b), "fp32 accumulator and its cast");
    // A chunk (model/autograd_ops.cpp) holds at once its logits, their log-softmax (or
    // probabilities) and the logits' gradient in fp32, the product's output or the gradient's
    // cast in the model's dtype, and logsumexp's or the entropy's temporaries.
    add(parts, "LM-head chunk", chunk * m.vocab * (b + 16), fmt::format("{} rows x {} logits", chunk, m.vocab));
    // Up to `hidden` rows every row's log-softmax is kept for backward.
    if (t <= m.hidden)
      add(parts, "kept LM-head log-probs", t * m.vocab * 4, fmt::format("{} rows x {} fp32", t, m.vocab));
  }
  if (!in.frozen_embeddings) {
    add(parts, "embedding gradient", m.vocab * m.hidden * b, "dense [vocab, hidden]");
    // The strategy's gradient hook widens each parameter's gradient to fp32 before adding it to the
    // flat buffer; with tied embeddings autograd first sums the head's and the embedding's.
    add(parts, "widened vocabulary gradient", m.vocab * m.hidden * (4 + (m.tied_embeddings ? b : 0)),
        m.tied_embeddings ? "fp32, after summing the tied head's and embedding's" : "fp32");
  }
  return parts;
}

std::vector<Part> forward_activations(const ActivationInputs& in) {
  std::vector<Part> parts;
  const ModelSize& m = in.model;
  const int64_t b = in.dtype_bytes, t = in.tokens;
  const int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  const int64_t attention = in.flash_attention ? 0 : t * in.seq_len * m.heads * (2 * b + 8);
  add(parts, "layer temporaries", t * b * (3 * m.hidden + q + 2 * kv + 2 * q + 3 * mlp_width(m)) + attention,
      fmt::format("{} tokens, sequences up to {}", t, in.seq_len));
  if (!in.flash_attention) add(parts, "attention mask", t * in.seq_len * 4, "fp32 [seq, seq] per sequence");
  add(parts, "hidden states", 2 * t * m.hidden * b, "residual stream");
  if (!in.value_head) {
    const int64_t chunk = std::min(t, in.head_chunk);
    add(parts, "LM-head chunk", chunk * m.vocab * (b + 12), fmt::format("{} rows x {} logits", chunk, m.vocab));
  }
  return parts;
}

EngineParts engine_memory(const EngineInputs& in) {
  EngineParts e;
  const ModelSize& m = in.model;
  const int64_t b = in.dtype_bytes;
  const int64_t weights = m.parameters() * b;
  add(e.resident, "weights", weights, fmt::format("{}, {} parameters", dtype_name(b), m.parameters()));
  add(e.resident, "LoRA base copy", in.lora_base_copy_parameters * b,
      "adapted modules' base weights, for merging (and an LM head of its own where a saved embedding or head "
      "unties them)");
  const int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  // vLLM sizes its buffers for the worst step (max_num_batched_tokens, max_num_seqs); on CPU the
  // pages a step touches are those of the sequences it runs.
  int64_t rows = std::min(in.max_num_seqs, in.max_num_batched_tokens);
  int64_t tokens = in.max_num_batched_tokens;
  if (in.lazy_kv && in.sequences_in_flight > 0) {
    rows = std::min(rows, in.sequences_in_flight);
    if (in.prompt_length > 0) tokens = std::min(tokens, in.sequences_in_flight * in.prompt_length);
  }
  // rollcpp's CPU engine keeps activations in fp32 whatever the weights' dtype
  // (engine/model_runner.cpp); vLLM's are in the model's dtype.
  const int64_t act = in.lazy_kv ? 4 : b;
  add(e.step, "step buffers", tokens * act * (3 * m.hidden + q + 2 * kv + q + 3 * mlp_width(m)),
      fmt::format("{} tokens, {}", tokens, dtype_name(act)));
  add(e.step, "logits", rows * m.vocab * 8, fmt::format("{} rows x {} fp32 logits and the sampler's copy", rows, m.vocab));
  int64_t outside_kv = weights;  // engine_core.cpp subtracts the weights alone
  if (in.budget_includes_step) {
    outside_kv += in.lora_base_copy_parameters * b + in.process_bytes;
    for (const auto& p : e.step) outside_kv += p.bytes;
  }
  const int64_t block = std::max<int64_t>(1, in.block_size);
  const int64_t per_block = m.kv_bytes_per_token(b) * block;
  const int64_t max_len = in.max_model_len > 0 ? in.max_model_len : m.max_position;
  const int64_t blocks_per_seq = ceil_div(max_len, block);
  // engine_core.cpp: gpu_memory_utilization x memory minus the weights, never more than every
  // sequence at full length.
  const int64_t avail = static_cast<int64_t>(static_cast<double>(in.capacity_bytes) * in.gpu_memory_utilization) - outside_kv;
  e.kv_blocks = std::min(std::max<int64_t>(0, avail / per_block), in.max_num_seqs * blocks_per_seq);
  e.concurrent_sequences = e.kv_blocks / std::max<int64_t>(1, blocks_per_seq);
  if (in.lazy_kv) {
    // The block allocator hands out the least recently freed block, so over a run the pages
    // written grow until every reserved block has been used once.
    const int64_t written = std::min(e.kv_blocks, in.sequences_over_run * ceil_div(in.seq_len, block));
    add(e.resident, "KV cache", written * per_block,
        fmt::format("{} of {} reserved blocks written by {} sequences of up to {} tokens", written, e.kv_blocks,
                    in.sequences_over_run, in.seq_len));
  } else {
    add(e.resident, "KV cache", e.kv_blocks * per_block,
        fmt::format("{} blocks of {} tokens: {} sequences of max_model_len {}", e.kv_blocks, block,
                    e.concurrent_sequences, max_len));
  }
  return e;
}

}  // namespace roll::memory
