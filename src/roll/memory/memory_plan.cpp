#include "roll/memory/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <utility>

#include "roll/config/lora_target.h"
#include "roll/config/opd.h"
#include "roll/core/cpu_block_cache.h"
#include "roll/core/error.h"
#include "roll/core/process_memory.h"
#include "roll/engine/engine_config.h"
#include "roll/train/options_from_config.h"
#include "roll/workers/role_config.h"
#include "roll/workers/role_model.h"
#include "roll/workers/trim_padding.h"

namespace roll::memory {

int64_t process_base_bytes(config::Platform platform) {
  switch (platform) {
    // Measured: a worker's resident set before it loads a model (libtorch, OpenMP and the
    // runtime's threads), docs/memory.md.
    case config::Platform::cpu:
    case config::Platform::npu_emulated: return int64_t{165} << 20;
    // Not measured here: the CUDA context plus the caching allocator's reserve, as commonly seen.
    case config::Platform::cuda: return int64_t{1} << 30;
    // torch_npu's context and the HCCL buffers, as the user's guide's NPU_MEMORY_FRACTION leaves room for.
    case config::Platform::npu: return int64_t{2} << 30;
  }
  return 0;
}

int64_t WorkerMemory::phase_bytes(const std::string& phase) const {
  int64_t n = 0;
  for (const auto& p : resident) n += p.bytes;
  if (!offloads || std::find(active.begin(), active.end(), phase) != active.end())
    for (const auto& p : states)
      if (phase != "load" || p.name == "weights") n += p.bytes;
  if (auto it = transient.find(phase); it != transient.end())
    for (const auto& p : it->second) n += p.bytes;
  return n;
}

std::string WorkerMemory::peak_phase() const {
  std::string best = kPhases[0];
  for (const char* p : kPhases)
    if (phase_bytes(p) > phase_bytes(best)) best = p;
  return best;
}

int64_t WorkerMemory::peak_bytes() const { return phase_bytes(peak_phase()); }

bool MemoryPlan::fits() const {
  if (!complete() || capacity.bytes <= 0) return false;
  for (const auto& d : devices)
    if (!d.fits(capacity.bytes)) return false;
  return true;
}

const WorkerMemory* MemoryPlan::find(const std::string& worker) const {
  for (const auto& w : workers)
    if (w.worker == worker) return &w;
  return nullptr;
}

namespace {

bool on_cpu(config::Platform p) { return p == config::Platform::cpu || p == config::Platform::npu_emulated; }

config::NodePtr child(const config::NodePtr& n, const char* key) {
  return n && n->is_map() ? n->get(key) : nullptr;
}

// The modules a LoRA role trains whole (its additional_target; a critic's score head), as the
// role reads them (workers/role_model.h), or none when the keys do not parse (validation reports it).
std::vector<std::string> saved_modules(const config::WorkerConfig& w, bool value_head) {
  try {
    if (auto lora = workers::role_lora(w, "", value_head)) return lora->modules_to_save;
  } catch (const ConfigError&) {
  }
  return {};
}

// LoRA's trained parameters: rank x (in + out) for each adapted linear module, and the saved
// modules whole. `base_copy`: what an engine keeps beside its weights to merge into (the adapted
// modules' base weights, and an LM head of its own where a saved module unties it).
int64_t lora_parameters(const ModelSize& m, const config::WorkerConfig& w, bool value_head, int64_t* base_copy) {
  if (!w.model_args.lora_target) return 0;
  const auto target = config::parse_lora_target(*w.model_args.lora_target, "model_args.lora_target");
  const int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim, r = w.model_args.lora_rank;
  int64_t n = 0, base = 0;
  for (const auto& module : config::lora_target_modules(target, m.layers)) {
    const auto dot = module.rfind('.');
    const std::string leaf = module.substr(dot + 1);
    int64_t in = m.hidden, out = m.hidden;
    if (leaf == "q_proj") out = q;
    else if (leaf == "k_proj" || leaf == "v_proj") out = kv;
    else if (leaf == "o_proj") in = q;
    else if (leaf == "gate_proj" || leaf == "up_proj") out = m.intermediate;
    else if (leaf == "down_proj") in = m.intermediate;
    n += r * (in + out);
    base += in * out;
  }
  bool unties = false;
  for (const std::string& s : saved_modules(w, value_head)) {
    if (s == "model.embed_tokens" || s == "lm_head") {
      n += m.vocab * m.hidden;
      unties = unties || m.tied_embeddings;
    } else if (s == "model.norm") {
      n += m.hidden;
    } else if (s == "score") {
      n += m.hidden + 1;
    }
  }
  if (unties) base += m.vocab * m.hidden;
  if (base_copy) *base_copy = base;
  return n;
}

struct Context {
  const config::PipelineConfig& c;
  MemoryPlan& plan;
  std::map<std::string, std::optional<ModelSize>> sizes;

  int64_t seq_len() const {
    if (c.sequence_length) return *c.sequence_length;
    return c.prompt_length + c.response_length.value_or(0);
  }

  // The worker's model, or nullopt (and the key is listed as unknown).
  std::optional<ModelSize> model_of(const std::string& cluster, const config::WorkerConfig& w) {
    const std::string key = cluster + ".model_args.model_name_or_path";
    if (!w.model_args.model_name_or_path) {
      if (std::find(plan.unknown.begin(), plan.unknown.end(), key + " (not set)") == plan.unknown.end())
        plan.unknown.push_back(key + " (not set)");
      return std::nullopt;
    }
    const std::string& name = *w.model_args.model_name_or_path;
    auto it = sizes.find(name);
    std::string why = "no local config.json, and not a known Qwen or Llama name";
    if (it == sizes.end()) {
      std::optional<ModelSize> size;
      try {
        size = model_size(name);
      } catch (const ConfigError& e) {
        why = e.what();  // an unreadable config.json: the plan has no size, the run will name the fault
      }
      it = sizes.emplace(name, size).first;
    }
    const std::string entry = fmt::format("{} '{}' ({})", key, name, why);
    if (!it->second && std::find(plan.unknown.begin(), plan.unknown.end(), entry) == plan.unknown.end())
      plan.unknown.push_back(entry);
    return it->second;
  }

  bool flash(const config::WorkerConfig& w) const {
    // rollcpp's CPU attention is HF's eager one; on accelerators ROLL's backends run flash kernels
    // unless the config asks for eager.
    return !on_cpu(plan.platform) && w.model_args.attn_implementation.value_or("fa2") != "eager";
  }

  // A CPU worker maps its model's files while it copies the weights out (model/safetensors.h).
  void load_phase(WorkerMemory& out, const ModelSize& m) const {
    if (on_cpu(plan.platform) && m.file_bytes > 0)
      out.transient["load"] = {{"model files", m.file_bytes, "mapped while the weights are read"}};
  }

  ActivationInputs activations(const ModelSize& m, const config::WorkerConfig& w, int64_t tokens,
                               bool value_head = false) const {
    ActivationInputs a;
    a.value_head = value_head;
    model::ModelConfig mc;
    mc.vocab_size = m.vocab;
    a.head_chunk = workers::lm_head_chunk_tokens(mc);
    a.model = m;
    a.dtype_bytes = dtype_bytes(w.model_args.dtype);
    a.tokens = tokens;
    a.seq_len = std::min(seq_len(), tokens);
    a.gradient_checkpointing = !w.model_args.disable_gradient_checkpointing;
    a.flash_attention = flash(w);
    const auto saved = saved_modules(w, value_head);
    a.frozen_embeddings = w.model_args.lora_target.has_value() &&
                          std::find(saved.begin(), saved.end(), "model.embed_tokens") == saved.end();
    return a;
  }

  int64_t forward_tokens(const config::WorkerConfig& w) const {
    if (w.use_dynamic_batching_in_infer && w.max_tokens_per_microbatch_in_infer)
      return *w.max_tokens_per_microbatch_in_infer;
    return std::max<int64_t>(1, w.infer_batch_size) * seq_len();
  }

  void trainer(WorkerMemory& out, const std::string& cluster, const config::WorkerConfig& w, int64_t dp,
               bool value_head, bool forward_pass) {
    auto m = model_of(cluster, w);
    if (!m) return;
    const train::TrainOptions o = train::train_options_from_config(c, 0.0, w, dp, c.ppo_epochs);
    TrainerInputs t;
    t.model = *m;
    t.dtype_bytes = dtype_bytes(w.model_args.dtype);
    t.value_head = value_head;
    t.dp = dp;
    t.zero_stage = o.zero_stage;
    const bool accelerator = !on_cpu(plan.platform);
    t.offload_optimizer = accelerator && o.offload_optimizer;
    const auto sc = w.strategy_args ? w.strategy_args->strategy_config : nullptr;
    const auto param = child(child(child(sc, "zero_optimization"), "offload_param"), "device");
    t.offload_params = accelerator && o.zero_stage == 3 && param && param->is_scalar() && param->text() == "cpu";
    t.lora_parameters = lora_parameters(*m, w, value_head, nullptr);
    t.adapter_bytes = w.model_args.autocast_adapter_dtype ? 4 : t.dtype_bytes;
    ResidentParts r = trainer_resident(t);
    out.states = std::move(r.device);
    out.host = std::move(r.host);
    if (t.offload_optimizer) out.notes.push_back("optimizer state offloaded to host memory");
    const int64_t train_tokens = w.use_dynamic_batching_in_train && w.max_tokens_per_microbatch_in_train > 0
                                     ? w.max_tokens_per_microbatch_in_train
                                     : w.training_args.per_device_train_batch_size * seq_len();
    out.transient["train"] = train_activations(activations(*m, w, train_tokens, value_head));
    load_phase(out, *m);
    if (forward_pass) {
      out.transient["log_probs"] = forward_activations(activations(*m, w, forward_tokens(w), value_head));
    }
  }

  void forward_only(WorkerMemory& out, const std::string& cluster, const config::WorkerConfig& w) {
    auto m = model_of(cluster, w);
    if (!m) return;
    const int64_t b = dtype_bytes(w.model_args.dtype);
    out.states.push_back({"weights", m->parameters() * b, fmt::format("{}, {} parameters", b == 4 ? "fp32" : "bf16",
                                                                         m->parameters())});
    out.transient["log_probs"] = forward_activations(activations(*m, w, forward_tokens(w)));
    load_phase(out, *m);
  }

  int64_t sequences_per_step() const {
    if (c.kind == config::PipelineKind::agentic) return c.rollout_batch_size;
    return c.rollout_batch_size * std::max<int64_t>(1, c.num_return_sequences_in_group);
  }

  void engine(WorkerMemory& out, const std::string& cluster, const config::WorkerConfig& w, int64_t workers,
              const std::string& phase) {
    auto m = model_of(cluster, w);
    if (!m) return;
    engine::EngineConfig ec;
    if (w.strategy_args && w.strategy_args->strategy_config)
      engine::apply_strategy_config(w.strategy_args->strategy_config, cluster + ".strategy_args.strategy_config", ec);
    EngineInputs e;
    e.model = *m;
    e.dtype_bytes = dtype_bytes(w.model_args.dtype);
    e.gpu_memory_utilization = ec.gpu_memory_utilization;
    e.lazy_kv = on_cpu(plan.platform);
    e.budget_includes_step = !e.lazy_kv;
    e.process_bytes = process_base_bytes(plan.platform);
    e.capacity_bytes = e.lazy_kv ? core::physical_memory_bytes() : plan.capacity.bytes;
    e.block_size = ec.block_size;
    e.max_model_len = ec.max_model_len;
    e.max_num_seqs = ec.max_num_seqs;
    e.max_num_batched_tokens = ec.max_num_batched_tokens;
    e.seq_len = seq_len();
    const int64_t steps = std::max<int64_t>(1, c.max_steps) + static_cast<int64_t>(c.async_generation_ratio);
    e.sequences_over_run = (steps * sequences_per_step() + workers - 1) / std::max<int64_t>(1, workers);
    e.sequences_in_flight =
        (sequences_per_step() * (1 + static_cast<int64_t>(c.async_generation_ratio)) + workers - 1) / workers;
    e.prompt_length = c.prompt_length;
    if (cluster == "actor_infer" && c.actor_train.model_args.lora_target)
      lora_parameters(*m, c.actor_train, false, &e.lora_base_copy_parameters);
    if (!e.lazy_kv && e.capacity_bytes <= 0) {
      out.notes.push_back("KV cache unknown without the device's memory (--device or --device-memory-gb)");
      e.capacity_bytes = 0;
    }
    EngineParts parts = engine_memory(e);
    out.states = std::move(parts.resident);
    out.transient[phase] = std::move(parts.step);
    load_phase(out, *m);
    if (!e.lazy_kv && e.capacity_bytes > 0) {
      const int64_t in_flight =
          (sequences_per_step() * (1 + static_cast<int64_t>(c.async_generation_ratio)) + workers - 1) / workers;
      if (parts.concurrent_sequences == 0)
        out.notes.push_back("the KV cache cannot hold one sequence of max_model_len");
      else if (parts.concurrent_sequences < in_flight)
        out.notes.push_back(fmt::format("the KV cache holds {} full-length sequences of the {} a step sends this "
                                        "worker: the rest wait",
                                        parts.concurrent_sequences, in_flight));
    }
  }
};

// ROLL's is_actor_infer_colocated: actor_infer shares a device with actor_train, reference or critic.
bool infer_colocated(const config::PlacementPlan& placement) {
  const auto* infer = placement.find("actor_infer");
  if (!infer) return false;
  std::set<int> mine;
  for (const auto& w : infer->workers) mine.insert(w.devices.begin(), w.devices.end());
  for (const char* other : {"actor_train", "reference", "critic"})
    if (const auto* c = placement.find(other); c && c->started)
      for (const auto& w : c->workers)
        for (int d : w.devices)
          if (mine.count(d)) return true;
  return false;
}

bool infer_on_node(const config::PlacementPlan& placement, int node) {
  const auto* infer = placement.find("actor_infer");
  if (!infer || !infer->started) return false;
  for (const auto& w : infer->workers)
    if (w.node == node) return true;
  return false;
}

// An infer rank on actor_train rank 0's node that does not compute from the shared file itself
// (pipeline/pipeline_base.cpp: only a rank sharing a device with training does, and not under LoRA).
bool copies_out(const config::PlacementPlan& placement, const config::PipelineConfig& c,
                const config::WorkerPlacement& infer) {
  const auto* train = placement.find("actor_train");
  if (!train || train->workers.empty() || infer.node != train->workers.front().node) return false;
  if (c.actor_train.model_args.lora_target) return true;
  for (const auto& w : train->workers)
    if (w.node == infer.node)
      for (int d : w.devices)
        if (std::find(infer.devices.begin(), infer.devices.end(), d) != infer.devices.end()) return false;
  return true;
}

int64_t parts_bytes(const std::vector<Part>& parts) {
  int64_t n = 0;
  for (const auto& p : parts) n += p.bytes;
  return n;
}

// A CPU worker keeps the freed blocks of its busiest phase for reuse (core/cpu_block_cache.h), up
// to the cache's limit, so in its other phases those bytes stay resident.
void hold_cached_blocks(WorkerMemory& out, int64_t limit) {
  int64_t busiest = 0;
  for (const auto& [phase, parts] : out.transient)
    if (phase != "load") busiest = std::max(busiest, parts_bytes(parts));
  const int64_t held = std::min(limit, busiest);
  for (const char* phase : kPhases) {
    if (std::string(phase) == "load") continue;
    const int64_t own = out.transient.count(phase) ? parts_bytes(out.transient.at(phase)) : 0;
    if (held > own)
      out.transient[phase].push_back({"cached blocks", held - own,
                                      "freed blocks of its busiest phase, kept for reuse (ROLL_CPU_BLOCK_CACHE_MB)"});
  }
}

}  // namespace

MemoryPlan plan_memory(const config::PipelineConfig& c, const config::PlacementPlan& placement,
                       const PlanRequest& request) {
  MemoryPlan plan;
  plan.platform = placement.platform;
  CapacityRequest cap = request.capacity;
  cap.platform = placement.platform;
  if (cap.host_memory_bytes <= 0) cap.host_memory_bytes = core::physical_memory_bytes();
  for (const auto& [k, v] : c.system_envs)
    if (k == "NPU_MEMORY_FRACTION") {
      try {
        cap.npu_memory_fraction = std::stod(v);
      } catch (const std::exception&) {
        throw ConfigError("system_envs.NPU_MEMORY_FRACTION", "NPU_MEMORY_FRACTION '" + v + "' is not a number");
      }
    }
  plan.capacity = device_capacity(cap);
  // What each worker's block cache may keep: the config's system_envs reach the workers.
  std::string cache_mib;
  if (const char* env = std::getenv("ROLL_CPU_BLOCK_CACHE_MB")) cache_mib = env;
  for (const auto& [k, v] : c.system_envs)
    if (k == "ROLL_CPU_BLOCK_CACHE_MB") cache_mib = v;
  int64_t cache_limit = 0;
  try {
    cache_limit = core::cpu_block_cache_limit(cache_mib.c_str(), cap.host_memory_bytes);
  } catch (const Error& e) {
    throw ConfigError("system_envs.ROLL_CPU_BLOCK_CACHE_MB", e.what());
  }
  Context ctx{c, plan, {}};
  const int64_t base = process_base_bytes(plan.platform);

  for (const auto& cluster : placement.clusters) {
    if (!cluster.started) continue;
    const config::WorkerConfig& w = workers::worker_config_of(c, cluster.name);
    const int64_t world = static_cast<int64_t>(cluster.workers.size());
    for (const auto& wp : cluster.workers) {
      WorkerMemory out;
      out.cluster = cluster.name;
      out.worker = wp.name;
      out.node = wp.node;
      out.devices = cluster.cpu_only ? std::vector<int>{} : wp.devices;
      out.resident.push_back({"process", cluster.cpu_only ? process_base_bytes(config::Platform::cpu) : base,
                              on_cpu(plan.platform) || cluster.cpu_only ? "runtime and libtorch (measured on CPU)"
                                                                        : "framework context and allocator reserve"});
      WorkerMemory parts;
      if (cluster.cpu_only) {
        // Rule rewards, env managers: their process only.
      } else if (cluster.name == "actor_train" || cluster.name == "sft_train") {
        ctx.trainer(parts, cluster.name, w, world, false, cluster.name == "actor_train");
      } else if (cluster.name == "critic") {
        ctx.trainer(parts, cluster.name, w, world, true, true);
      } else if (cluster.name == "actor_infer") {
        ctx.engine(parts, cluster.name, w, world, "generate");
      } else if (cluster.name == "reference" || cluster.name == "reward_model" ||
                 config::opd_teacher_of(c, cluster.name)) {
        ctx.forward_only(parts, cluster.name, w);
      } else {
        // An LLM judge on devices: its own engine, busy while the rewards are computed.
        ctx.engine(parts, cluster.name, w, world, "generate");
      }
      out.states = std::move(parts.states);
      out.transient = std::move(parts.transient);
      if (cluster.name == "actor_infer" && on_cpu(plan.platform) && copies_out(placement, c, wp)) {
        // It keeps the trainer's file mapped between updates and copies the weights out of it.
        int64_t weights = 0;
        for (const auto& p : out.states)
          if (p.name == "weights") weights = p.bytes;
        if (weights > 0) out.states.push_back({"weight sync file", weights, "actor_train rank 0's /dev/shm file, mapped"});
      }
      if (cluster.name == "actor_train" && wp.rank == 0 && infer_on_node(placement, wp.node)) {
        // Rank 0 rewrites the weights into a /dev/shm file the infer ranks of its node map
        // (workers/shared_weights.h): host memory, resident from the first model update on.
        if (auto m = ctx.model_of(cluster.name, w); m && !w.model_args.lora_target) {
          Part file{"weight sync file", m->parameters() * dtype_bytes(w.model_args.dtype),
                    "/dev/shm, mapped by the infer ranks of this node"};
          (on_cpu(plan.platform) ? out.states : out.host).push_back(file);
        }
      }
      for (const auto& [phase, t] : out.transient)
        if (phase != "load") out.active.push_back(phase);
      if (on_cpu(plan.platform) && !cluster.cpu_only) hold_cached_blocks(out, cache_limit);
      if (!on_cpu(plan.platform) && !cluster.cpu_only && !out.states.empty()) {
        // ROLL's state_offload_manger around every call of a trainer or forward worker; vLLM and
        // SGLang sleep only when they share a device with another model.
        out.offloads = cluster.name != "actor_infer" || infer_colocated(placement);
        if (out.offloads) {
          int64_t states = 0;
          for (const auto& p : out.states) states += p.bytes;
          out.notes.push_back(fmt::format("model states offloaded to host memory outside {} (ROLL's state offload)",
                                          fmt::join(out.active, ", ")));
          if (cluster.name != "actor_infer") {
            out.host.push_back({"offloaded states", states, "between its calls"});
          } else {
            // Sleep level 1: the weights go to host memory, the KV cache is dropped.
            for (const auto& p : out.states)
              if (p.name == "weights") out.host.push_back({"weights while asleep", p.bytes, "sleep level 1"});
          }
        }
      }
      out.host = std::move(parts.host);
      out.notes = std::move(parts.notes);
      plan.workers.push_back(std::move(out));
    }
  }

  // Sum per device (accelerators) or per node (CPU: the node's RAM is the one pool).
  std::map<std::pair<int, int>, DeviceMemory> units;
  const bool pooled = plan.capacity.shared_by_node;
  for (size_t i = 0; i < plan.workers.size(); ++i) {
    const auto& w = plan.workers[i];
    for (const auto& p : w.host) plan.host_bytes[w.node] += p.bytes;
    if (!pooled) {
      // On an accelerator node every worker process also holds host memory: its own process for
      // a device worker, all of it for a CPU-only one.
      if (w.devices.empty()) {
        for (const auto& p : w.resident) plan.host_bytes[w.node] += p.bytes;
        continue;
      }
      plan.host_bytes[w.node] += process_base_bytes(config::Platform::cpu);
    }
    std::vector<int> where = pooled ? std::vector<int>{-1} : w.devices;
    for (int d : where) {
      auto& u = units[{w.node, d}];
      u.node = w.node;
      u.device = d;
      u.workers.push_back(i);
      // A worker over several devices (tensor parallel in ROLL's terms) spreads evenly.
      const int64_t share = static_cast<int64_t>(where.size());
      for (const char* phase : kPhases) u.phase_bytes[phase] += w.phase_bytes(phase) / share;
    }
  }
  if (pooled) {
    // The driver runs on node 0 beside the workers.
    auto& u = units[{0, -1}];
    for (const char* phase : kPhases) u.phase_bytes[phase] += process_base_bytes(config::Platform::cpu);
  }
  for (auto& [key, u] : units) {
    u.peak_phase = kPhases[0];
    for (const char* phase : kPhases)
      if (u.phase_bytes[phase] > u.phase_bytes[u.peak_phase]) u.peak_phase = phase;
    u.peak_bytes = u.phase_bytes[u.peak_phase];
    plan.devices.push_back(std::move(u));
  }
  return plan;
}

}  // namespace roll::memory
