// Derived values and consistency checks (docs/config.md; docs/design.md sections 4-5).
// ROLL does these in the dataclasses' __post_init__; the order below follows it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "roll/config/device_mapping.h"
#include "roll/config/load.h"
#include "roll/config/lora_target.h"
#include "roll/config/model_arch.h"
#include "roll/config/opd.h"
#include "roll/config/token_budget_rule.h"
#include "roll/config/tracker_names.h"
#include "roll/core/cpu_features.h"

namespace roll::config {
namespace {

struct Ctx {
  PipelineConfig& c;
  const NodePtr& tree;
  const PlatformRules& rules;
  Diagnostics& diag;

  // "file:line: " of a dotted key in the resolved tree (empty when absent).
  std::string at(const std::string& key) const {
    NodePtr cur = tree;
    for (const auto& part : split_path(key)) {
      if (!cur || !cur->is_map()) return "";
      cur = cur->get(part);
    }
    if (!cur) return "";
    std::string w = cur->loc().str();
    return w.empty() ? "" : w + ": ";
  }
  bool present(const std::string& key) const { return !at(key).empty() || has(key); }
  bool has(const std::string& key) const {
    NodePtr cur = tree;
    for (const auto& part : split_path(key)) {
      if (!cur || !cur->is_map()) return false;
      cur = cur->get(part);
    }
    return cur != nullptr;
  }
  void error(const std::string& key, const std::string& msg) {
    diag.error(key, fmt::format("{}key '{}': {}", at(key), key, msg));
  }
  void warn(const std::string& key, const std::string& msg) {
    diag.warn(key, fmt::format("{}key '{}': {}", at(key), key, msg));
  }
  template <typename T>
  void one_of(const std::string& key, const T& value, std::initializer_list<const char*> allowed) {
    for (const char* a : allowed)
      if (value == a) return;
    std::string list;
    for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    error(key, fmt::format("'{}' is not one of: {}", value, list));
  }
};

const std::set<std::string> kTrainStrategies = {"deepspeed_train", "fsdp2_train", "megatron_train"};
const std::set<std::string> kForwardStrategies = {"hf_infer", "megatron_infer", "fsdp2_infer", "deepspeed_infer"};
const std::set<std::string> kGenerateStrategies = {"vllm", "sglang"};

bool is_inference_strategy(const std::string& s) { return kForwardStrategies.count(s) || kGenerateStrategies.count(s); }

int64_t cfg_int(const NodePtr& cfg, const char* key, int64_t def) {
  if (!cfg || !cfg->is_map()) return def;
  NodePtr n = cfg->get(key);
  if (!n || !n->is_scalar()) return def;
  try {
    return std::stoll(n->text());
  } catch (...) {
    return def;
  }
}

std::vector<int> intersect(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  for (int x : a)
    if (std::find(b.begin(), b.end(), x) != b.end()) out.push_back(x);
  std::sort(out.begin(), out.end());
  return out;
}

bool contiguous(const std::vector<int>& ids) {
  for (size_t i = 1; i < ids.size(); ++i)
    if (ids[i] != ids[i - 1] + 1) return false;
  return true;
}

void check_template(Ctx& x, const std::string& key, const std::string& name) {
  x.one_of(key, name,
           {"native", "qwen2_5", "qwen3", "native_nonthinking", "longCOT_qwen2.5", "longcot_V3", "chatml", "base",
            "empty"});
}

// WorkerConfig.__post_init__ plus our strategy checks, for one role that will run.
// Refusals a worker would otherwise meet when it starts (docs/known-gaps.md), said by validate.
void check_generating_args(Ctx& x, const std::string& key, const std::optional<GeneratingArguments>& g) {
  if (g && g->num_beams > 1)
    x.error(key + ".num_beams", fmt::format("num_beams = {}: beam search is not supported in rollcpp yet; see "
                                            "docs/known-gaps.md",
                                            g->num_beams));
}

// Data files the loaders read: json/jsonl (data_args.dataset_type json).
void check_data_args(Ctx& x, const std::string& key, const std::optional<DataArguments>& da) {
  if (!da) return;
  if (da->dataset_type != "json")
    x.error(key + ".dataset_type", fmt::format("dataset_type '{}' is not supported (only json data files)",
                                               da->dataset_type));
  for (const auto& f : da->file_name) {
    const size_t dot = f.find_last_of('.');
    const std::string ext = dot == std::string::npos ? "" : f.substr(dot);
    if (ext != ".json" && ext != ".jsonl")
      x.error(key + ".file_name", fmt::format("'{}': data files are .json or .jsonl (arrow, csv, parquet and txt are "
                                              "not read); see docs/known-gaps.md",
                                              f));
  }
}

// Dynamic batching (docs/workers.md): actor_train and critic plan token-budget micro-batches for
// training, they and the reference for their forward passes; a budget must hold one rounded
// sequence. ROLL's SFT pipeline plans none.
void check_dynamic_batching(Ctx& x, const std::string& role, const WorkerConfig& w) {
  auto check_budget = [&](const std::string& phase, std::optional<int64_t> max_tokens, int64_t round) {
    if (auto p = token_budget_problem(role, phase, max_tokens, round)) x.error(p->key, p->message);
  };
  const bool trainer = role == "actor_train" || role == "critic";
  if (role == "sft_train" && w.use_dynamic_batching_in_train)
    x.error(role + ".use_dynamic_batching_in_train",
            "dynamic batching in SFT is not supported (ROLL's SFT pipeline plans no dynamic micro-batches); see "
            "docs/known-gaps.md");
  if (trainer && w.use_dynamic_batching_in_train)
    check_budget("train", w.max_tokens_per_microbatch_in_train, w.sequence_length_round_in_train);
  if ((trainer || role == "reference") && w.use_dynamic_batching_in_infer)
    check_budget("infer", w.max_tokens_per_microbatch_in_infer, w.sequence_length_round_in_infer);
}

// A role whose worker loads a model: its architecture, dtype and batching are ones the worker takes.
void check_model_role(Ctx& x, const std::string& role, const WorkerConfig& w) {
  check_dynamic_batching(x, role, w);
  if (w.model_args.dtype == "fp16")
    x.error(role + ".model_args.dtype", "fp16: rollcpp runs models in fp32 or bf16 (fp16 training needs dynamic loss "
                                        "scaling, which is not implemented); use bf16");
  if (!w.model_args.model_name_or_path) return;
  const std::string& name = *w.model_args.model_name_or_path;
  const std::string key = role + ".model_args.model_name_or_path";
  const auto arch = model_architecture(name);
  if (!arch)
    x.warn(key, fmt::format("'{}' is neither a local model nor a hub name rollcpp knows the architecture of; the "
                            "worker will check its config.json ({} load)",
                            name, kLoadableModelTypes));
  else if (!arch->model_type.empty() && !is_loadable_model_type(arch->model_type))
    x.error(key, fmt::format("'{}' is a {} model ({}); rollcpp loads {} models; see docs/known-gaps.md", name,
                             arch->model_type, arch->source, kLoadableModelTypes));
}

// A tensor / pipeline / context / sequence parallel layout rollcpp runs as data parallel.
struct ParallelLayout {
  int64_t fold = 1;               // model-parallel ranks per data-parallel rank in ROLL (tp·pp·cp·ulysses)
  std::vector<std::string> keys;  // "<key> = <value>" of every layout setting > 1
};

// docs/config.md "Parallel layouts": every device becomes a data-parallel rank. ROLL's global
// batch (per_device_train_batch_size × GA × devices / fold) is kept by dividing GA, then the
// per-device batch, by the fold; a layout whose per-rank samples do not divide is an error.
void fold_model_parallel(Ctx& x, const std::string& role, WorkerConfig& w, const ParallelLayout& layout,
                         bool trains) {
  if (layout.keys.empty()) return;
  std::string keys;
  for (const auto& k : layout.keys) keys += (keys.empty() ? "" : ", ") + k;
  const int64_t n = w.device_mapping ? static_cast<int64_t>(w.device_mapping->size()) : 0;
  std::string batch;
  if (trains && layout.fold > 1 && n > 0) {
    if (n % layout.fold != 0) {
      x.error(role + ".device_mapping", fmt::format("{} devices do not divide into model-parallel groups of {} ({})",
                                                    n, layout.fold, keys));
      return;
    }
    auto& ta = w.training_args;
    const int64_t per_rank = ta.per_device_train_batch_size * ta.gradient_accumulation_steps;
    if (per_rank % layout.fold != 0) {
      x.error(role + ".training_args.gradient_accumulation_steps",
              fmt::format("{}: rollcpp runs every device as a data-parallel rank with ROLL's global batch, which "
                          "needs per_device_train_batch_size × gradient_accumulation_steps ({} × {}) divisible by {}",
                          keys, ta.per_device_train_batch_size, ta.gradient_accumulation_steps, layout.fold));
      return;
    }
    const int64_t g = std::gcd(ta.gradient_accumulation_steps, layout.fold);
    batch = fmt::format("; the global batch is ROLL's: gradient_accumulation_steps {} -> {}, "
                        "per_device_train_batch_size {} -> {}",
                        ta.gradient_accumulation_steps, ta.gradient_accumulation_steps / g,
                        ta.per_device_train_batch_size, ta.per_device_train_batch_size / (layout.fold / g));
    ta.gradient_accumulation_steps /= g;
    ta.per_device_train_batch_size /= layout.fold / g;
  }
  const std::string what =
      trains ? fmt::format("each of the {} devices is a data-parallel rank with the parameters, gradients and optimizer "
                           "state sharded over all ranks (ZeRO-3) instead of split inside a model-parallel group",
                           n)
             : "each device holds a whole model copy";
  x.warn(role, fmt::format("{}: rollcpp has no tensor/pipeline/context/expert/sequence parallelism yet; {}{}. The "
                           "maths is the same; per-device memory and communication differ (whole-layer all-gathers "
                           "and gradient reduce-scatters instead of activation exchange)",
                           keys, what, batch));
}

// One role's LoRA keys (config/lora_target.h); the roles' agreement is check_lora_roles.
void check_lora_args(Ctx& x, const std::string& role, const ModelArguments& a) {
  const std::string key = role + ".model_args";
  try {
    parse_lora_target(*a.lora_target, key + ".lora_target");
  } catch (const ConfigError& e) {
    x.error(e.key(), e.what());
  }
  if (a.lora_rank < 1) x.error(key + ".lora_rank", fmt::format("lora_rank must be >= 1, got {}", a.lora_rank));
  if (a.lora_alpha && *a.lora_alpha <= 0) x.error(key + ".lora_alpha", "lora_alpha must be > 0");
  if (a.lora_dropout < 0 || a.lora_dropout >= 1)
    x.error(key + ".lora_dropout", fmt::format("lora_dropout must be in [0, 1), got {}", a.lora_dropout));
  if (a.additional_target) {
    try {
      parse_additional_target(*a.additional_target, role == "critic", key + ".additional_target");
    } catch (const ConfigError& e) {
      x.error(e.key(), e.what());
    }
  }
  if (role != "actor_train" && role != "actor_infer" && role != "sft_train" && role != "critic")
    x.error(key + ".lora_target",
            fmt::format("LoRA applies to actor_train, actor_infer, critic and sft_train, not {}", role));
}

// actor_train trains the adapters actor_infer applies: both name the same modules, rank and alpha
// ("all-linear" and the list of every linear module agree).
void check_lora_roles(Ctx& x) {
  const ModelArguments& t = x.c.actor_train.model_args;
  const ModelArguments& i = x.c.actor_infer.model_args;
  if (!t.lora_target && !i.lora_target) return;
  if (!t.lora_target || !i.lora_target) {
    x.error(t.lora_target ? "actor_infer.model_args.lora_target" : "actor_train.model_args.lora_target",
            fmt::format("actor_train.model_args.lora_target is {} and actor_infer.model_args.lora_target is {}: "
                        "set both (the engine applies the adapters actor_train trains) or neither",
                        t.lora_target ? "'" + *t.lora_target + "'" : "unset",
                        i.lora_target ? "'" + *i.lora_target + "'" : "unset"));
    return;
  }
  std::vector<std::string> tm, im;
  try {
    tm = lora_target_modules(parse_lora_target(*t.lora_target, "actor_train.model_args.lora_target"), 1);
    im = lora_target_modules(parse_lora_target(*i.lora_target, "actor_infer.model_args.lora_target"), 1);
  } catch (const ConfigError&) {
    return;  // reported by check_lora_args
  }
  if (tm != im)
    x.error("actor_infer.model_args.lora_target",
            fmt::format("actor_train.model_args.lora_target '{}' and actor_infer.model_args.lora_target '{}' adapt "
                        "different modules ({} against {})",
                        *t.lora_target, *i.lora_target, fmt::join(tm, ","), fmt::join(im, ",")));
  if (t.lora_rank != i.lora_rank)
    x.error("actor_infer.model_args.lora_rank",
            fmt::format("actor_train.model_args.lora_rank {} and actor_infer.model_args.lora_rank {} differ",
                        t.lora_rank, i.lora_rank));
  if (t.lora_alpha.value_or(2 * t.lora_rank) != i.lora_alpha.value_or(2 * i.lora_rank))
    x.error("actor_infer.model_args.lora_alpha",
            fmt::format("actor_train.model_args.lora_alpha {} and actor_infer.model_args.lora_alpha {} differ",
                        t.lora_alpha.value_or(2 * t.lora_rank), i.lora_alpha.value_or(2 * i.lora_rank)));
  // The engine takes actor_train's saved modules from the sync; actor_infer need not name them,
  // and where it does it must name the same.
  if (i.additional_target) {
    try {
      const auto ts = t.additional_target
                          ? parse_additional_target(*t.additional_target, false, "actor_train.model_args.additional_target")
                          : std::vector<std::string>{};
      const auto is = parse_additional_target(*i.additional_target, false, "actor_infer.model_args.additional_target");
      if (ts != is)
        x.error("actor_infer.model_args.additional_target",
                fmt::format("actor_train.model_args.additional_target {} and actor_infer.model_args.additional_target "
                            "'{}' differ (the engine serves the modules actor_train trains whole)",
                            t.additional_target ? "'" + *t.additional_target + "'" : "unset", *i.additional_target));
    } catch (const ConfigError&) {
      // reported by check_lora_args
    }
  }
}

void derive_worker(Ctx& x, const std::string& role, WorkerConfig& w, bool needs_devices) {
  ParallelLayout layout;
  const std::string sa = role + ".strategy_args";
  if (!w.strategy_args) {
    if (needs_devices && w.device_mapping) w.strategy_args.emplace();  // ROLL's default: fsdp2_train
  }
  if (w.strategy_args) {
    auto& s = *w.strategy_args;
    const std::string key = sa + ".strategy_name";
    if (s.strategy_name == "diffusion_deepspeed_train" || s.strategy_name == "mock_infer") {
      x.error(key, fmt::format("strategy '{}' is not supported in rollcpp yet; see docs/known-gaps.md",
                               s.strategy_name));
    } else if (!kTrainStrategies.count(s.strategy_name) && !is_inference_strategy(s.strategy_name)) {
      x.error(key, fmt::format("unknown strategy '{}' (expected one of deepspeed_train, fsdp2_train, megatron_train, "
                               "hf_infer, fsdp2_infer, megatron_infer, deepspeed_infer, vllm, sglang)",
                               s.strategy_name));
    }
    const NodePtr& sc = s.strategy_config;
    if (sc && !sc->is_null() && !sc->is_map())
      x.error(sa + ".strategy_config", fmt::format("expected a mapping, got a {}", sc->kind_name()));
    // Model-parallel layouts run as data parallel on the same devices (fold_model_parallel below).
    if (s.strategy_name.rfind("megatron", 0) == 0) {
      for (const char* k : {"tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size"}) {
        const int64_t v = cfg_int(sc, k, 1);
        if (v > 1) {
          layout.fold *= v;
          layout.keys.push_back(fmt::format("{}.strategy_config.{} = {}", sa, k, v));
        }
      }
      for (const char* k : {"expert_model_parallel_size", "virtual_pipeline_model_parallel_size"}) {
        const int64_t v = cfg_int(sc, k, 1);
        if (v > 1) layout.keys.push_back(fmt::format("{}.strategy_config.{} = {}", sa, k, v));
      }
    }
    if (kGenerateStrategies.count(s.strategy_name)) {
      for (const char* k : {"tensor_parallel_size", "pipeline_parallel_size", "tp_size"}) {
        const int64_t v = cfg_int(sc, k, 1);
        if (v > 1) layout.keys.push_back(fmt::format("{}.strategy_config.{} = {}", sa, k, v));
      }
      // One engine replica per device, whatever num_gpus_per_worker ROLL would derive (tp x pp).
      if (!layout.keys.empty()) w.num_gpus_per_worker = 1;
    }
    if (s.strategy_name == "deepspeed_train") {
      NodePtr zero = sc && sc->is_map() ? sc->get("zero_optimization") : nullptr;
      int64_t stage = cfg_int(zero, "stage", 0);
      if (stage < 0 || stage > 3)
        x.error(sa + ".strategy_config.zero_optimization.stage",
                fmt::format("ZeRO stage {} does not exist (expected 0, 1, 2 or 3)", stage));
    }
    // num_gpus_per_worker: 1 for everything but the generation engines (ROLL: tp*pp for vllm).
    if (!kGenerateStrategies.count(s.strategy_name)) w.num_gpus_per_worker = 1;
  }
  if (w.model_args.ulysses_size > 1) {
    layout.fold *= w.model_args.ulysses_size;
    layout.keys.push_back(fmt::format("{}.model_args.ulysses_size = {}", role, w.model_args.ulysses_size));
  }
  if (w.model_args.lora_target) check_lora_args(x, role, w.model_args);
  else if (w.model_args.additional_target)
    x.error(role + ".model_args.additional_target",
            "additional_target names modules trained whole beside LoRA adapters; set lora_target as well (without "
            "LoRA the whole model trains)");
  if (w.model_args.dtype == "auto") w.model_args.dtype = resolve_auto_dtype(x.rules.compute_on_cpu, core::cpu_features());
  x.one_of(role + ".model_args.dtype", w.model_args.dtype, {"fp32", "bf16", "fp16", "auto"});
  if (needs_devices && x.rules.compute_on_cpu)
    if (auto slow = cpu_dtype_warning(w.model_args.dtype, core::cpu_features())) x.warn(role + ".model_args.dtype", *slow);
  if (w.model_args.dtype == "bf16") w.training_args.bf16 = true;
  if (w.model_args.dtype == "fp16") w.training_args.fp16 = true;
  if (w.model_args.attn_implementation)
    x.one_of(role + ".model_args.attn_implementation", *w.model_args.attn_implementation,
             {"sdpa", "fa2", "auto", "eager", "flash_attention_2", "flash_attn"});
  x.one_of(role + ".training_args.lr_scheduler_type", w.training_args.lr_scheduler_type,
           {"linear", "cosine", "constant", "constant_with_warmup"});
  if (w.training_args.per_device_train_batch_size <= 0)
    x.error(role + ".training_args.per_device_train_batch_size", "must be >= 1");
  if (w.training_args.gradient_accumulation_steps <= 0)
    x.error(role + ".training_args.gradient_accumulation_steps", "must be >= 1");
  if (w.infer_batch_size <= 0) x.error(role + ".infer_batch_size", "must be >= 1");
  if (w.data_args) check_template(x, role + ".data_args.template", w.data_args->template_name);
  if (w.pg_variant)
    x.one_of(role + ".pg_variant", *w.pg_variant, {"vanilla", "ppo", "tis", "topr", "cispo", "kimi15"});

  if (w.device_mapping) {
    if (w.device_mapping->empty()) x.error(role + ".device_mapping", "is empty");
    if (w.num_gpus_per_worker <= 0) w.num_gpus_per_worker = 1;
    const int64_t n = static_cast<int64_t>(w.device_mapping->size());
    if (n % w.num_gpus_per_worker != 0) {
      x.error(role + ".device_mapping", fmt::format("{} devices do not divide into workers of num_gpus_per_worker={}",
                                                    n, w.num_gpus_per_worker));
    } else {
      const int64_t derived = n / w.num_gpus_per_worker;
      if (w.world_size && *w.world_size != derived && x.has(role + ".world_size"))
        x.warn(role + ".world_size", fmt::format("world_size {} is replaced by {} derived from device_mapping",
                                                 *w.world_size, derived));
      w.world_size = derived;
    }
  } else {
    w.num_gpus_per_worker = 0;
    if (!w.world_size) w.world_size = 1;
    if (*w.world_size <= 0) x.error(role + ".world_size", fmt::format("must be >= 1, got {}", *w.world_size));
    if (needs_devices && role == "actor_train" && x.c.kind == PipelineKind::agentic)
      x.error(role + ".device_mapping",
              "actor_train has no device_mapping: this looks like a rollout-only config (ROLL's "
              "start_agentic_rollout_pipeline.py), which is not supported in rollcpp yet; see docs/known-gaps.md. "
              "For training, set actor_train.device_mapping");
    else if (needs_devices)
      x.error(role + ".device_mapping",
              fmt::format("{} needs devices: set device_mapping (e.g. list(range(0,1)))", role));
  }
  const bool trains = w.strategy_args && kTrainStrategies.count(w.strategy_args->strategy_name);
  fold_model_parallel(x, role, w, layout, trains);
  w.training_args.seed = x.c.seed;
  if (!w.checkpoint_config || w.checkpoint_config->is_null()) w.checkpoint_config = x.c.checkpoint_config;
  // system_envs: the top-level ones are exported by the driver; a worker's own values win.
  Ordered<std::string> merged = x.c.system_envs;
  for (const auto& [k, v] : w.system_envs) {
    const std::string& key = k;  // a structured binding cannot be captured before clang 16
    auto it = std::find_if(merged.begin(), merged.end(), [&](const auto& e) { return e.first == key; });
    if (it != merged.end())
      it->second = v;
    else
      merged.emplace_back(k, v);
  }
  w.system_envs = merged;
}

void check_platform_strategy(Ctx& x, const std::string& role, const WorkerConfig& w) {
  if (!w.strategy_args) return;
  const auto& name = w.strategy_args->strategy_name;
  const std::string key = role + ".strategy_args.strategy_name";
  if (!x.rules.training_strategies.empty() && kTrainStrategies.count(name)) {
    const auto& allowed = x.rules.training_strategies;
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end())
      x.error(key, fmt::format("strategy '{}' is not available on {} (use {})", name, x.rules.name,
                               fmt::join(allowed, " or ")));
  }
  if (x.rules.restrict_attn_implementation && name.rfind("megatron", 0) == 0 && !kTrainStrategies.count(name))
    x.error(key, fmt::format("strategy '{}' is not available on {} (use hf_infer or fsdp2_infer)", name,
                             x.rules.name));
  if (x.rules.restrict_attn_implementation && w.model_args.attn_implementation) {
    const auto& a = *w.model_args.attn_implementation;
    if (a != "fa2" && a != "sdpa" && a != "auto")
      x.error(role + ".model_args.attn_implementation",
              fmt::format("'{}' is not available on {}: the flash_attn package does not run there; use fa2 "
                          "(through transformers), sdpa or auto",
                          a, x.rules.name));
  }
}

void derive_common(Ctx& x) {
  PipelineConfig& c = x.c;
  if (c.response_length) {
    c.sequence_length = c.prompt_length + *c.response_length;
    c.response_length.reset();
  }
  if (c.val_prompt_length.has_value() != c.val_sequence_length.has_value())
    x.error(c.val_prompt_length ? "val_sequence_length" : "val_prompt_length",
            "val_prompt_length and val_sequence_length must be set together");
  if (!c.val_prompt_length) c.val_prompt_length = c.prompt_length;
  if (!c.val_sequence_length) c.val_sequence_length = c.sequence_length;
  if (c.profiler_timeline && c.profiler_memory)
    x.error("profiler_memory", "profiler_timeline and profiler_memory cannot both be true");
  for (auto [key, v] : {std::pair{"max_steps", c.max_steps}, {"save_steps", c.save_steps},
                        {"logging_steps", c.logging_steps}, {"rollout_batch_size", c.rollout_batch_size}})
    if (v <= 0 && !(std::string(key) == "max_steps" && v == -1)) x.error(key, fmt::format("must be >= 1, got {}", v));
  if (c.eval_steps < 0) x.error("eval_steps", fmt::format("must be >= 0, got {}", c.eval_steps));
  if (c.num_gpus_per_node <= 0) x.error("num_gpus_per_node", fmt::format("must be >= 1, got {}", c.num_gpus_per_node));
  if (c.rpc_timeout <= 0) x.error("rpc_timeout", "must be > 0");
  if (c.track_with == "ml_tracker")
    x.error("track_with", fmt::format("'ml_tracker' is not in ROLL's tracker registry either (ROLL raises 'Unknown "
                                      "tracker name'); valid names: {}",
                                      kTrackerNames));
  else
    x.one_of("track_with", c.track_with, {"tensorboard", "wandb", "swanlab", "stdout", "trackio", "jsonl", ""});
  if (is_upload_tracker(c.track_with))
    x.warn("track_with", upload_tracker_notice(c.track_with, "the tracker log directory (docs/tracking.md)"));
  if (c.async_generation_ratio < 0)
    x.error("async_generation_ratio", fmt::format("must be >= 0, got {}", c.async_generation_ratio));
  if (c.async_generation_ratio > 0 && c.kind == PipelineKind::sft)
    x.error("async_generation_ratio", "the SFT pipeline generates nothing: async_generation_ratio must be 0");
  if (c.generate_opt_level != 0 && c.generate_opt_level != 1)
    x.error("generate_opt_level", fmt::format("must be 0 or 1, got {}", c.generate_opt_level));
  if (c.transfer_backend && !c.transfer_backend->is_null())
    x.error("transfer_backend", "remote batch transfer is not supported in rollcpp yet; see docs/known-gaps.md");
  if (c.rollout_mock && c.rollout_mock->is_map()) {
    NodePtr en = c.rollout_mock->get("enable");
    if (en && en->is_scalar() && (en->text() == "true" || en->text() == "True"))
      x.error("rollout_mock.enable", "rollout dump/mock is not supported in rollcpp yet; see docs/known-gaps.md");
  }
  // Quirk 6 fixed: checkpoint_config.output_dir gets no timestamp suffix, so
  // resume_from_checkpoint: true finds the newest checkpoint (docs/compat.md).
  if (!c.checkpoint_config || c.checkpoint_config->is_null()) c.checkpoint_config = Node::map();
}

// On-policy distillation (config/opd.h, docs/opd.md), before the RL keys are checked: pure OPD
// learns from the teachers' KL alone, so ROLL fixes gamma 0 (a per-token penalty, not a return),
// the reinforce estimator, no critic warm-up and no KL loss or KL reward. The first teacher is
// the reference (ROLL's `self.reference`); each teacher's opd_kl_coef defaults to 1.
void derive_opd(Ctx& x) {
  PipelineConfig& c = x.c;
  if (!opd_enabled(c)) return;
  if (c.kind != PipelineKind::rlvr)
    x.error(c.is_pure_opd ? "pure_opd_pipeline_type" : "use_opd",
            "on-policy distillation runs on the RLVR pipeline in rollcpp; the agentic one is not built "
            "(docs/known-gaps.md)");
  if (c.opd_teachers.empty()) return;  // the loader named the missing teacher
  if (c.is_pure_opd) {
    c.gamma = 0;
    c.adv_estimator = "reinforce";
    c.critic_warmup = 0;
    c.use_kl_loss = false;
    c.add_token_level_kl = false;
  }
  c.enable_reference = true;
  for (size_t i = 0; i < c.opd_teachers.size(); ++i) {
    WorkerConfig& t = c.opd_teachers[i].second;
    if (!t.opd_kl_coef) t.opd_kl_coef = 1.0;
    if (!t.model_args.model_name_or_path)
      x.error(opd_teacher_key(c, i) + ".model_args.model_name_or_path", "a teacher needs its model");
  }
  c.reference = c.opd_teachers.front().second;
}

void derive_ppo(Ctx& x) {
  PipelineConfig& c = x.c;
  x.one_of("adv_estimator", c.adv_estimator,
           {"gae", "reinforce", "grpo", "gigpo", "step_reinforce", "agentic_reinforce", "rloo"});
  x.one_of("kl_penalty", c.kl_penalty, {"kl", "abs", "mse", "full"});
  x.one_of("loss_agg_mode", c.loss_agg_mode,
           {"token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"});
  if (c.norm_mean_type) x.one_of("norm_mean_type", *c.norm_mean_type, {"batch", "group", "running"});
  if (c.norm_std_type) x.one_of("norm_std_type", *c.norm_std_type, {"batch", "group", "running"});
  x.one_of("importance_sampling", c.importance_sampling, {"token", "seq"});
  if (c.ppo_epochs <= 0) x.error("ppo_epochs", fmt::format("must be >= 1, got {}", c.ppo_epochs));
  if (c.pg_clip < 0) x.error("pg_clip", "must be >= 0");
  if (c.max_grad_norm <= 0) x.error("max_grad_norm", "must be > 0");
  if (c.reward_clip && *c.reward_clip <= 0) x.error("reward_clip", "must be > 0");
  if (c.advantage_clip && *c.advantage_clip <= 0) x.error("advantage_clip", "must be > 0");
  if (c.value_clip && *c.value_clip <= 0) x.error("value_clip", "must be > 0");
  if (c.target_kl && *c.target_kl <= 0) x.error("target_kl", "must be > 0");
  if (c.overlong_reward.enable && c.overlong_reward.buffer_len <= 0)
    x.error("overlong_reward.buffer_len", "must be > 0 when overlong_reward.enable is true");
  const auto& is = c.train_infer_correction.is_weight;
  x.one_of("train_infer_correction.is_weight.weight_type", is.weight_type,
           {"token", "geometric", "sequence", "segment"});
  for (size_t i = 0; i < c.train_infer_correction.filters.size(); ++i)
    x.one_of(fmt::format("train_infer_correction.filters.{}.agg_type", i), c.train_infer_correction.filters[i].agg_type,
             {"token", "geometric", "sequence", "segment"});

  // Quirk 4 (reproduced, with a warning): `pretrain` sets all three policy model paths as soon as any is unset.
  if (c.pretrain) {
    WorkerConfig* roles[] = {&c.actor_train, &c.actor_infer, &c.reference};
    const char* names[] = {"actor_train", "actor_infer", "reference"};
    bool any_unset = false;
    for (auto* w : roles) any_unset |= !w->model_args.model_name_or_path.has_value();
    if (any_unset)
      for (int i = 0; i < 3; ++i) {
        auto& p = roles[i]->model_args.model_name_or_path;
        if (p && *p != *c.pretrain)
          x.warn(std::string(names[i]) + ".model_args.model_name_or_path",
                 fmt::format("'{}' is replaced by pretrain '{}' because another policy role has no model path (as ROLL "
                             "does)",
                             *p, *c.pretrain));
        p = c.pretrain;
      }
  }
  if (!c.critic.model_args.model_name_or_path) c.critic.model_args.model_name_or_path = c.reward_pretrain;

  // Quirk 2 (reproduced): init_kl_coef defaults to 0.2, which enables the reference model.
  c.enable_reference = c.enable_reference || c.init_kl_coef > 0 || c.use_kl_loss;
}

// Old-logprob recompute needs the train world size, so it runs after the roles are derived.
void derive_recompute(Ctx& x, int64_t samples_per_step) {
  PipelineConfig& c = x.c;
  const int64_t dp = std::max<int64_t>(1, c.actor_train.world_size.value_or(1));
  const auto& ta = c.actor_train.training_args;
  const double per_rank = static_cast<double>(samples_per_step) / static_cast<double>(dp);
  const double micro = static_cast<double>(ta.per_device_train_batch_size * ta.gradient_accumulation_steps);
  const bool several_backward_steps = micro > 0 && per_rank / micro > 1.0;
  c.enable_old_logprobs_recompute = c.enable_old_logprobs_recompute || c.init_kl_coef > 0 ||
                                    c.adv_estimator == "step_reinforce" || c.adv_estimator == "gigpo" ||
                                    several_backward_steps;
  if (c.force_disable_old_logprobs_recompute) c.enable_old_logprobs_recompute = false;
  // LR schedule length (docs/config.md): optimizer steps over the whole run, before the ÷dp in the strategy.
  if (c.actor_train.training_args.max_steps < 0 && micro > 0)
    c.actor_train.training_args.max_steps = std::max<int64_t>(
        1, static_cast<int64_t>(c.max_steps * samples_per_step * c.ppo_epochs / (ta.per_device_train_batch_size *
                                                                                 ta.gradient_accumulation_steps)));
}

void check_infer_strategy(Ctx& x) {
  PipelineConfig& c = x.c;
  if (!c.actor_infer.strategy_args) {
    x.error("actor_infer.strategy_args", "actor_infer needs strategy_args.strategy_name: vllm or sglang");
    return;
  }
  if (!kGenerateStrategies.count(c.actor_infer.strategy_args->strategy_name))
    x.error("actor_infer.strategy_args.strategy_name",
            fmt::format("actor_infer must use vllm or sglang (both served by rollcpp's engine), got '{}'",
                        c.actor_infer.strategy_args->strategy_name));
  c.actor_infer.max_concurrency =
      std::max<int64_t>(c.actor_infer.max_concurrency, std::max<int64_t>(c.max_running_requests + 1, 1000));
  for (const char* role : {"actor_train", "critic"}) {
    const WorkerConfig& w = std::string(role) == "actor_train" ? c.actor_train : c.critic;
    if (w.strategy_args && is_inference_strategy(w.strategy_args->strategy_name))
      x.error(std::string(role) + ".strategy_args.strategy_name",
              fmt::format("{} trains and needs a training strategy (deepspeed_train, fsdp2_train or "
                          "megatron_train), got '{}'",
                          role, w.strategy_args->strategy_name));
  }
  // The engine's context limit against the configured sequence length (seed Example 2).
  if (c.sequence_length) {
    int64_t mml = cfg_int(c.actor_infer.strategy_args->strategy_config, "max_model_len", 0);
    if (mml > 0 && mml < *c.sequence_length)
      x.warn("actor_infer.strategy_args.strategy_config.max_model_len",
             fmt::format("max_model_len ({}) is below sequence_length ({}): responses are cut at max_model_len - "
                         "prompt length tokens, as vLLM does",
                         mml, *c.sequence_length));
  }
}

// Colocation rules (docs/config.md, docs/design.md section 5) and ROLL's contiguity requirement for weight sync.
void check_colocation(Ctx& x, bool critic_started) {
  PipelineConfig& c = x.c;
  if (!c.actor_infer.device_mapping) return;
  const auto& infer = *c.actor_infer.device_mapping;
  if (!x.rules.colocation_allowed) {
    if (c.actor_train.device_mapping) {
      auto both = intersect(infer, *c.actor_train.device_mapping);
      if (!both.empty())
        x.error("actor_infer.device_mapping",
                fmt::format("on {} training and inference must use separate devices (colocated mode is not "
                            "supported): actor_infer and actor_train share device ids {}",
                            x.rules.name, format_device_ids(both)));
    }
    if (critic_started && c.critic.device_mapping) {
      auto both = intersect(infer, *c.critic.device_mapping);
      if (!both.empty())
        x.error("actor_infer.device_mapping",
                fmt::format("on {} training and inference must use separate devices: actor_infer and critic share "
                            "device ids {}",
                            x.rules.name, format_device_ids(both)));
    }
  }
  if (c.actor_train.device_mapping && !contiguous(*c.actor_train.device_mapping) &&
      !intersect(infer, *c.actor_train.device_mapping).empty())
    x.warn("actor_train.device_mapping", "colocated weight sync in ROLL needs contiguous device ranges");
}

// Asynchronous RLVR (docs/pipelines.md, "Asynchronous generation"): ROLL's rules (ratio >= 1, the
// streaming scheduler), and separate devices for actor_infer, which ROLL only warns about: on shared
// devices generation could not run while the others train, so nothing would overlap.
void check_async_rlvr(Ctx& x) {
  PipelineConfig& c = x.c;
  if (c.async_generation_ratio < 1)
    x.error("async_generation_ratio",
            fmt::format("async_generation_ratio must be 0 (synchronous) or >= 1.0 (ROLL's rule), got {}",
                        c.async_generation_ratio));
  if (c.generate_opt_level != 1)
    x.error("generate_opt_level", fmt::format("asynchronous generation (async_generation_ratio = {}) needs "
                                              "generate_opt_level 1, got {}",
                                              c.async_generation_ratio, c.generate_opt_level));
  if (!c.actor_infer.device_mapping) return;
  const auto& infer = *c.actor_infer.device_mapping;
  const std::vector<std::pair<std::string, const WorkerConfig*>> others = {
      {"actor_train", &c.actor_train}, {"critic", &c.critic}, {"reference", &c.reference}};
  for (const auto& [role, w] : others) {
    if (!w->device_mapping) continue;
    if ((role == "critic" && c.adv_estimator != "gae") || (role == "reference" && !c.enable_reference)) continue;
    auto both = intersect(infer, *w->device_mapping);
    if (!both.empty())
      x.error("actor_infer.device_mapping",
              fmt::format("asynchronous generation (async_generation_ratio = {}) needs actor_infer on devices of its "
                          "own: it shares device ids {} with {}.device_mapping; give actor_infer other devices or "
                          "set async_generation_ratio: 0",
                          c.async_generation_ratio, format_device_ids(both), role));
  }
}

void derive_rlvr(Ctx& x) {
  PipelineConfig& c = x.c;
  if (!c.sequence_length) x.error("sequence_length", "RLVR needs response_length or sequence_length");
  if (c.sequence_length && *c.sequence_length <= c.prompt_length)
    x.error("sequence_length", fmt::format("sequence_length ({}) must exceed prompt_length ({})",
                                           c.sequence_length.value_or(0), c.prompt_length));
  if (c.num_return_sequences_in_group <= 0)
    x.error("num_return_sequences_in_group", fmt::format("must be >= 1, got {}", c.num_return_sequences_in_group));
  if (!c.actor_infer.generating_args) c.actor_infer.generating_args.emplace();
  auto& gen = *c.actor_infer.generating_args;
  gen.num_return_sequences = c.num_return_sequences_in_group;
  if (c.sequence_length) gen.max_new_tokens = *c.sequence_length - c.prompt_length;
  if (c.validation) {
    if (!c.validation->generating_args) c.validation->generating_args.emplace();
    if (c.val_sequence_length && c.val_prompt_length)
      c.validation->generating_args->max_new_tokens = *c.val_sequence_length - *c.val_prompt_length;
    if (c.validation->data_args) check_template(x, "validation.data_args.template", c.validation->data_args->template_name);
  }
  if (c.global_template) check_template(x, "global_template", *c.global_template);
  for (const auto& [tag, t] : c.tag_to_template) check_template(x, "tag_to_template." + tag, t);
  if (c.difficulty_low_threshold > c.difficulty_high_threshold)
    x.error("difficulty_low_threshold", "must not exceed difficulty_high_threshold");

  // Rewards: domain -> tags; a tag may belong to one domain only.
  if (c.rewards.empty()) x.error("rewards", "an RLVR config needs at least one rewards.<domain> entry");
  std::map<std::string, std::string> tag_domain;
  for (auto& [domain, r] : c.rewards) {
    const std::string key = "rewards." + domain;
    const std::string cls = r.worker.worker_cls.value_or("");
    static const std::vector<std::pair<std::string, std::string>> supported = {
        {"MathRuleRewardWorker", "math_rule"},
        {"CodeSandboxRewardWorker", "code_sandbox"},
        {"LLMJudgeRewardWorker", "llm_judge"},
        {"CrossThinkQARuleRewardWorker", "crossthinkqa"},
        {"GeneralRuleRewardWorker", "ifeval"},
    };
    bool known = cls.empty();
    for (const auto& [suffix, kind] : supported)
      if (cls.size() >= suffix.size() && cls.compare(cls.size() - suffix.size(), suffix.size(), suffix) == 0)
        known = true;
    if (!known)
      x.error(key + ".worker_cls",
              fmt::format("reward worker '{}' is not supported in rollcpp yet (supported: MathRuleRewardWorker, "
                          "CodeSandboxRewardWorker, LLMJudgeRewardWorker, CrossThinkQARuleRewardWorker, "
                          "GeneralRuleRewardWorker); see docs/known-gaps.md",
                          cls));
    if (cls.ends_with("CrossThinkQARuleRewardWorker")) {
      if (!r.reward_type)
        x.error(key + ".reward_type", "CrossThinkQARuleRewardWorker needs reward_type: loose, soft or strict");
      else
        x.one_of(key + ".reward_type", *r.reward_type, {"loose", "soft", "strict"});
    }
    if (r.judge_model_type && *r.judge_model_type == "api")
      x.error(key + ".judge_model_type",
              "judge_model_type 'api' needs network access, which rollcpp never uses; use 'inference'");
    else if (r.judge_model_type && *r.judge_model_type != "inference" &&
             cls.ends_with("LLMJudgeRewardWorker"))
      x.error(key + ".judge_model_type",
              fmt::format("judge_model_type '{}' is not one ROLL's LLMJudgeRewardWorker serves either (it raises "
                          "'Unsupported model type'); use 'inference'",
                          *r.judge_model_type));
    x.one_of(key + ".query_filter_config.type", r.query_filter_config.type,
             {"no_filter", "mean_filter", "std_filter"});
    derive_worker(x, key, r.worker, false);
    for (const auto& tag : r.worker.tag_included) {
      auto [it, inserted] = tag_domain.emplace(tag, domain);
      if (!inserted && it->second != domain)
        x.error(key + ".tag_included",
                fmt::format("tag '{}' is listed by both rewards.{} and rewards.{}", tag, it->second, domain));
    }
  }
  if (c.async_generation_ratio > 0) check_async_rlvr(x);
  // Training data: ROLL requires domain_interleave_probs and messages XOR prompt.
  const auto& da = c.actor_train.data_args;
  if (!da) {
    x.error("actor_train.data_args", "RLVR needs actor_train.data_args (file_name, domain_interleave_probs, messages)");
  } else {
    if (da->file_name.empty()) x.error("actor_train.data_args.file_name", "RLVR needs training data files");
    if (da->domain_interleave_probs.empty())
      x.error("actor_train.data_args.domain_interleave_probs",
              "RLVR needs domain_interleave_probs, e.g. {math_rule: 1}");
    double total = 0;
    for (const auto& [domain, p] : da->domain_interleave_probs) {
      total += p;
      if (p < 0) x.error("actor_train.data_args.domain_interleave_probs." + domain, "must be >= 0");
      bool found = false;
      for (const auto& [d, r] : c.rewards) found |= d == domain;
      if (!found && !c.rewards.empty())
        x.error("actor_train.data_args.domain_interleave_probs." + domain,
                fmt::format("domain '{}' has no rewards.{} entry", domain, domain));
    }
    if (!da->domain_interleave_probs.empty() && std::fabs(total) < 1e-12)
      x.error("actor_train.data_args.domain_interleave_probs", "the probabilities sum to 0");
    if (da->messages.has_value() == da->prompt.has_value())
      x.error("actor_train.data_args.messages",
              "set exactly one of actor_train.data_args.messages (chat column) or actor_train.data_args.prompt "
              "(raw text column)");
  }
}

int64_t ceil_div(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }

void derive_env_manager(Ctx& x, const std::string& key, EnvManagerConfig& m, bool is_train) {
  PipelineConfig& c = x.c;
  if (m.llm_proxy.proxy_type != "policy")
    x.error(key + ".llm_proxy.proxy_type",
            fmt::format("proxy type '{}' is not supported in rollcpp yet (only 'policy': the actor_infer router); see "
                        "docs/known-gaps.md",
                        m.llm_proxy.proxy_type));
  check_generating_args(x, key + ".generating_args", m.worker.generating_args);
  if (m.group_size <= 0) x.error(key + ".group_size", fmt::format("must be >= 1, got {}", m.group_size));
  if (m.num_env_groups <= 0) x.error(key + ".num_env_groups", fmt::format("must be >= 1, got {}", m.num_env_groups));
  if (m.group_size_redundancy < 0) x.error(key + ".group_size_redundancy", "must be >= 0");
  if (m.tags.size() != m.num_groups_partition.size())
    x.error(key + ".num_groups_partition",
            fmt::format("has {} entries but {}.tags has {}; give one group count per tag", m.num_groups_partition.size(),
                        key, m.tags.size()));
  int64_t sum = 0;
  for (auto n : m.num_groups_partition) sum += n;
  if (sum != m.num_env_groups)
    x.error(key + ".num_groups_partition",
            fmt::format("sums to {} but num_env_groups is {} (ROLL does not split automatically)", sum,
                        m.num_env_groups));
  for (const auto& tag : m.tags) {
    NodePtr spec;
    for (const auto& [t, s] : c.custom_envs)
      if (t == tag) spec = s;
    if (!spec) {
      x.error(key + ".tags", fmt::format("tag '{}' has no custom_envs.{} entry", tag, tag));
      continue;
    }
    if (!spec->is_map()) {
      x.error("custom_envs." + tag, fmt::format("expected a mapping, got a {}", spec->kind_name()));
      continue;
    }
    NodePtr type = spec->get("env_type");
    const std::string env_type = type && type->is_scalar() ? type->text() : "";
    if (env_type != "frozen_lake" && env_type != "sokoban")
      x.error("custom_envs." + tag + ".env_type",
              fmt::format("environment type '{}' is not supported in rollcpp yet (supported: frozen_lake, sokoban); "
                          "see docs/known-gaps.md",
                          env_type));
    NodePtr mgr = spec->get("env_manager_cls");
    // A trajectory sample spans every turn, with no single generation limit to shape against.
    if (is_train && c.overlong_reward.enable && !(mgr && mgr->is_scalar() && mgr->text().ends_with("StepEnvManager")))
      x.error("overlong_reward.enable",
              fmt::format("the agentic overlong penalty applies to per-turn samples (against max_tokens_per_step): "
                          "custom_envs.{}.env_manager_cls must be StepEnvManager (it is {})",
                          tag, mgr && mgr->is_scalar() ? mgr->text() : "TrajEnvManager, the default"));
    // Agent runners and tool wrappers drive other env managers (agent_native, tool-call envs).
    for (const char* k : {"agent_runner_cls", "tool_wrapper"})
      if (NodePtr v = spec->get(k); v && !v->is_null())
        x.error("custom_envs." + tag + "." + k,
                fmt::format("{} is not supported in rollcpp yet (TrajEnvManager and StepEnvManager drive the env "
                            "themselves); see docs/known-gaps.md",
                            k));
    if (mgr && mgr->is_scalar()) {
      const std::string& cls = mgr->text();
      if (!cls.ends_with("TrajEnvManager") && !cls.ends_with("StepEnvManager"))
        x.error("custom_envs." + tag + ".env_manager_cls",
                fmt::format("env manager '{}' is not supported in rollcpp yet (supported: TrajEnvManager, "
                            "StepEnvManager); see docs/known-gaps.md",
                            cls));
    }
  }
  const int64_t final_group_size = m.group_size + m.group_size_redundancy;
  const int64_t envs = m.num_env_groups * final_group_size;
  if (m.max_env_num_per_worker <= 0) m.max_env_num_per_worker = envs;  // ROLL: 0 = all envs in one worker
  m.worker.world_size = ceil_div(envs, m.max_env_num_per_worker);
  m.worker.num_gpus_per_worker = 0;
  if (c.pretrain) m.worker.model_args.model_name_or_path = c.pretrain;
  if (is_train) {
    const int64_t traj_per_env = ceil_div(c.rollout_batch_size, m.num_env_groups * m.group_size);
    if (m.max_traj_per_env < 0) m.max_traj_per_env = traj_per_env;
    if (m.max_traj_per_env < traj_per_env)
      x.error(key + ".max_traj_per_env",
              fmt::format("{} is below the {} trajectories per env a step needs (rollout_batch_size {} / ({} groups x "
                          "group_size {}))",
                          m.max_traj_per_env, traj_per_env, c.rollout_batch_size, m.num_env_groups, m.group_size));
    if (m.group_size > 0 && c.rollout_batch_size % m.group_size != 0)
      x.error("rollout_batch_size", fmt::format("{} is not a multiple of {}.group_size {}", c.rollout_batch_size, key,
                                                m.group_size));
  } else if (c.val_batch_size >= 0 && m.group_size > 0) {
    if (c.val_batch_size % m.group_size != 0)
      x.error("val_batch_size",
              fmt::format("{} is not a multiple of {}.group_size {}", c.val_batch_size, key, m.group_size));
    if (c.val_batch_size % (m.num_env_groups * m.group_size) != 0)
      x.error("val_batch_size", fmt::format("{} is not a multiple of {} val envs ({} groups x group_size {})",
                                            c.val_batch_size, m.num_env_groups * m.group_size, m.num_env_groups,
                                            m.group_size));
  }
  c.actor_infer.max_concurrency =
      std::max<int64_t>(c.actor_infer.max_concurrency, m.worker.world_size.value_or(1) * m.max_env_num_per_worker + 1);
}

// Asynchronous agentic training (docs/agentic.md): ROLL's rules, a whole number of steps ahead and
// no device shared between training and inference (ROLL: "colocating mode only support
// sync/on-policy training"). Partial GPU mode (train devices a strict subset of infer's) is
// check_partial_gpu_mode's.
void check_async_agentic(Ctx& x) {
  PipelineConfig& c = x.c;
  if (c.async_generation_ratio != std::floor(c.async_generation_ratio))
    x.error("async_generation_ratio",
            fmt::format("the agentic pipeline runs a whole number of steps ahead: async_generation_ratio must be an "
                        "integer, got {}",
                        c.async_generation_ratio));
  if (!c.actor_train.device_mapping || !c.actor_infer.device_mapping) return;
  const auto& train = *c.actor_train.device_mapping;
  const auto& infer = *c.actor_infer.device_mapping;
  auto both = intersect(train, infer);
  const bool partial_mode = c.partial_gpu_mode && both.size() == train.size() && train.size() < infer.size();
  if (!both.empty() && !partial_mode)
    x.error("actor_infer.device_mapping",
            fmt::format("asynchronous generation (async_generation_ratio = {}) needs actor_infer on devices of its "
                        "own (ROLL: colocating mode only supports sync/on-policy training): it shares device ids {} "
                        "with actor_train.device_mapping",
                        c.async_generation_ratio, format_device_ids(both)));
}

void derive_agentic(Ctx& x) {
  PipelineConfig& c = x.c;
  if (!c.sequence_length) x.error("sequence_length", "the agentic pipeline needs sequence_length");
  // The env managers render prompts with the model's own chat template, as ROLL's do; a template
  // named here changes nothing, and an SFT warm start rendered with it would train on prompts the
  // policy never sees.
  for (const auto& [role, w] : {std::pair<const char*, const WorkerConfig*>{"actor_train", &c.actor_train},
                                {"actor_infer", &c.actor_infer}})
    if (w->data_args && w->data_args->template_name != "native")
      x.warn(std::string(role) + ".data_args.template",
             fmt::format("'{}' is not used by the agentic pipeline: its env managers render every prompt with the "
                         "model's own chat template (tokenizer_config.json, enable_thinking false), as ROLL's do; "
                         "an SFT warm start for this policy should render the same way (data_args.template: native)",
                         w->data_args->template_name));
  if (c.max_steps <= 0 && c.max_steps != -1) x.error("max_steps", "must be > 0 or -1");
  x.one_of("batch_adjust_mode", c.batch_adjust_mode, {"copy", "delete", "auto", "random_sample"});
  x.one_of("ratio_type", c.ratio_type, {"token", "segment"});
  x.one_of("exp_mode", c.exp_mode, {"train", "eval_gt", "eval_test"});
  x.one_of("reward_normalization.method", c.reward_normalization.method,
           {"identity", "mean", "mean_std", "asym_clip"});
  if (c.reward_normalization.norm_mean_type)
    x.one_of("reward_normalization.norm_mean_type", *c.reward_normalization.norm_mean_type, {"batch", "group"});
  if (c.reward_normalization.norm_std_type)
    x.one_of("reward_normalization.norm_std_type", *c.reward_normalization.norm_std_type, {"batch", "group"});
  if (c.adv_estimator == "rloo" || c.adv_estimator == "gigpo" || c.adv_estimator == "step_reinforce") {
    // fine: all implemented for agentic
  }
  // generating_args: actor_infer's go to both env managers, else the train env manager's go to actor_infer.
  if (c.actor_infer.generating_args) {
    c.train_env_manager.worker.generating_args = c.actor_infer.generating_args;
    c.val_env_manager.worker.generating_args = c.actor_infer.generating_args;
  } else if (c.train_env_manager.worker.generating_args) {
    c.actor_infer.generating_args = c.train_env_manager.worker.generating_args;
  } else {
    c.actor_infer.generating_args.emplace();
  }
  for (auto* g : {&c.actor_infer.generating_args, &c.train_env_manager.worker.generating_args,
                  &c.val_env_manager.worker.generating_args})
    if (*g) (*g)->num_return_sequences = 1;
  derive_env_manager(x, "train_env_manager", c.train_env_manager, true);
  derive_env_manager(x, "val_env_manager", c.val_env_manager, false);
  if (c.async_generation_ratio > 0) check_async_agentic(x);
}

// Agentic partial_gpu_mode validation (docs/config.md).
void check_partial_gpu_mode(Ctx& x) {
  PipelineConfig& c = x.c;
  if (!c.partial_gpu_mode || !c.actor_train.device_mapping || !c.actor_infer.device_mapping) return;
  const auto& train = *c.actor_train.device_mapping;
  const auto& infer = *c.actor_infer.device_mapping;
  auto both = intersect(train, infer);
  if (both.empty()) return;  // (A) disjoint
  const bool train_strict_subset = both.size() == train.size() && train.size() < infer.size();
  if (train_strict_subset) {  // (B) partial mode: shrinks and expands the infer fleet every step
    x.error("partial_gpu_mode",
            "actor_train devices are a strict subset of actor_infer's: ROLL's partial GPU mode (async generation "
            "that shrinks the infer fleet off the train devices while training) is not supported in rollcpp yet; "
            "set partial_gpu_mode: false or use disjoint device_mapping (docs/known-gaps.md)");
    return;
  }
  // (C) colocating: the train devices must cover the infer (+ reward) devices exactly.
  size_t reward_devices = c.reward && c.reward->worker.device_mapping ? c.reward->worker.device_mapping->size() : 0;
  if (train.size() != infer.size() + reward_devices)
    x.error("actor_train.device_mapping",
            fmt::format("colocated agentic mode needs len(actor_train devices) == len(actor_infer devices) + "
                        "len(reward devices): {} != {} + {} (or set partial_gpu_mode: false)",
                        train.size(), infer.size(), reward_devices));
}

void derive_sft(Ctx& x) {
  PipelineConfig& c = x.c;
  if (!c.sequence_length) x.error("sequence_length", "the SFT pipeline needs sequence_length");
  if (!c.sft_train.model_args.model_name_or_path) c.sft_train.model_args.model_name_or_path = c.pretrain;
  if (!c.sft_train.model_args.model_name_or_path) x.error("pretrain", "set pretrain or sft_train.model_args.model_name_or_path");
  if (!c.sft_train.data_args || c.sft_train.data_args->file_name.empty())
    x.error("sft_train.data_args.file_name", "the SFT pipeline needs training data files");
  // SFTConfig's defaults: the columns instruction/output, and max_steps -1 (the step count then
  // comes from num_train_epochs and the data size, which the pipeline knows).
  if (!c.prompt_key) c.prompt_key = "instruction";
  if (!c.response_key) c.response_key = "output";
  if (!x.has("max_steps")) c.max_steps = -1;
}

// ROLL's DPOConfig.__post_init__ (docs/dpo.md): pretrain fills both models, the batch sizes count
// pairs and are doubled into rows (a pair is two rows), the workers' LR schedule runs max_steps.
void derive_dpo(Ctx& x) {
  PipelineConfig& c = x.c;
  if (!c.sequence_length) x.error("sequence_length", "the DPO pipeline needs sequence_length");
  for (auto* w : {&c.actor_train, &c.reference})
    if (!w->model_args.model_name_or_path) w->model_args.model_name_or_path = c.pretrain;
  if (!c.actor_train.model_args.model_name_or_path)
    x.error("pretrain", "set pretrain or actor_train.model_args.model_name_or_path");
  if (!c.actor_train.data_args || c.actor_train.data_args->file_name.empty())
    x.error("actor_train.data_args.file_name", "the DPO pipeline needs preference data files");
  if (c.max_steps <= 0) x.error("max_steps", fmt::format("the DPO pipeline needs max_steps >= 1, got {}", c.max_steps));
  if (!(c.beta > 0)) x.error("beta", fmt::format("must be > 0, got {}", c.beta));
  if (c.label_smoothing < 0 || c.label_smoothing > 1)
    x.error("label_smoothing", fmt::format("must be in [0, 1], got {}", c.label_smoothing));
  if (c.ipo && c.label_smoothing != 0)
    x.warn("label_smoothing", "ignored with ipo: true (the IPO loss has no label smoothing)");
  if (c.chosen_key == c.rejected_key)
    x.error("rejected_key", fmt::format("chosen_key and rejected_key are both '{}'", c.chosen_key));
  for (auto [name, w] : {std::pair{"actor_train", &c.actor_train}, {"reference", &c.reference}})
    if (w->use_sequence_packing)
      x.error(std::string(name) + ".use_sequence_packing", "the DPO pipeline does not pack sequences (as ROLL)");
  if (c.actor_train.model_args.lora_target)
    x.error("actor_train.model_args.lora_target", "LoRA DPO is not supported in rollcpp yet; see docs/known-gaps.md");
  c.actor_train.training_args.per_device_train_batch_size *= 2;
  c.actor_train.infer_batch_size *= 2;
  c.reference.infer_batch_size *= 2;
  c.actor_train.training_args.max_steps = c.max_steps;
}

// ROLL's DistillConfig.__post_init__ (docs/distill.md): student_pretrain / teacher_pretrain fill
// the two models (else pretrain), sequence_length defaults to 2048, max_grad_norm to 0 (no
// clipping), and the step count comes from the data as in SFT (max_steps -1 unless set).
void derive_distill(Ctx& x) {
  PipelineConfig& c = x.c;
  if (!c.sequence_length) c.sequence_length = 2048;
  if (!x.has("max_grad_norm")) c.max_grad_norm = 0;
  for (auto [w, path] : {std::pair{&c.student, &c.student_pretrain}, {&c.teacher, &c.teacher_pretrain}}) {
    if (!w->model_args.model_name_or_path) w->model_args.model_name_or_path = *path ? *path : c.pretrain;
  }
  if (!c.student.model_args.model_name_or_path)
    x.error("student_pretrain", "set student_pretrain or student.model_args.model_name_or_path");
  if (!c.teacher.model_args.model_name_or_path)
    x.error("teacher_pretrain", "set teacher_pretrain or teacher.model_args.model_name_or_path");
  if (!c.student.data_args || c.student.data_args->file_name.empty())
    x.error("student.data_args.file_name", "the distillation pipeline needs training data files");
  if (c.distill_loss_weight < 0 || c.distill_loss_weight > 1)
    x.error("distill_loss_weight", fmt::format("must be in [0, 1], got {}", c.distill_loss_weight));
  if (c.logits_topk < 0) x.error("logits_topk", fmt::format("must be >= 0 (0: the whole vocabulary), got {}", c.logits_topk));
  for (auto [key, v] : {std::pair{"kd_temperature", c.kd_temperature}, {"teacher_temperature", c.teacher_temperature}})
    if (!(v > 0)) x.error(key, fmt::format("must be > 0, got {}", v));
  x.one_of("kd_objective", c.kd_objective,
           {"forward_kl", "reverse_kl", "adaptive_kl", "skewed_forward_kl", "skewed_reverse_kl", "js_divergence"});
  if (c.skew_lambda < 0 || c.skew_lambda > 1)
    x.error("skew_lambda", fmt::format("must be in [0, 1], got {}", c.skew_lambda));
  if (c.student.model_args.lora_target)
    x.error("student.model_args.lora_target", "LoRA distillation is not supported in rollcpp yet; see docs/known-gaps.md");
  for (auto [name, w] : {std::pair{"student", &c.student}, {"teacher", &c.teacher}})
    if (w->use_sequence_packing)
      x.warn(std::string(name) + ".use_sequence_packing",
             "ignored: the distillation batches are padded rows (the same losses, without packing's speed-up)");
  if (!x.has("max_steps")) c.max_steps = -1;
}

}  // namespace

void derive_and_check(PipelineConfig& c, const NodePtr& resolved, Platform platform,
                      std::optional<int> devices_per_node, Diagnostics& diag) {
  Ctx x{c, resolved, platform_rules(platform), diag};
  if (devices_per_node) c.num_gpus_per_node = *devices_per_node;
  derive_common(x);

  if (c.kind == PipelineKind::sft) {
    derive_sft(x);
    derive_worker(x, "sft_train", c.sft_train, true);
    check_platform_strategy(x, "sft_train", c.sft_train);
    check_model_role(x, "sft_train", c.sft_train);
    check_data_args(x, "sft_train.data_args", c.sft_train.data_args);
    if (c.sft_train.strategy_args && is_inference_strategy(c.sft_train.strategy_args->strategy_name))
      x.error("sft_train.strategy_args.strategy_name", "sft_train needs a training strategy");
    return;
  }

  if (c.kind == PipelineKind::distill) {
    derive_distill(x);
    derive_worker(x, "student", c.student, true);
    derive_worker(x, "teacher", c.teacher, true);
    for (auto [role, w] : {std::pair{"student", &c.student}, {"teacher", &c.teacher}}) {
      check_platform_strategy(x, role, *w);
      check_model_role(x, role, *w);
    }
    check_data_args(x, "student.data_args", c.student.data_args);
    if (c.validation) check_data_args(x, "validation.data_args", c.validation->data_args);
    if (c.student.strategy_args && is_inference_strategy(c.student.strategy_args->strategy_name))
      x.error("student.strategy_args.strategy_name", "the student needs a training strategy");
    return;
  }
  if (c.kind == PipelineKind::dpo) {
    derive_dpo(x);
    derive_worker(x, "actor_train", c.actor_train, true);
    derive_worker(x, "reference", c.reference, true);
    for (auto [role, w] : {std::pair{"actor_train", &c.actor_train}, {"reference", &c.reference}}) {
      check_platform_strategy(x, role, *w);
      check_model_role(x, role, *w);
    }
    check_data_args(x, "actor_train.data_args", c.actor_train.data_args);
    if (c.validation) check_data_args(x, "validation.data_args", c.validation->data_args);
    if (c.actor_train.strategy_args && is_inference_strategy(c.actor_train.strategy_args->strategy_name))
      x.error("actor_train.strategy_args.strategy_name", "actor_train needs a training strategy");
    return;
  }

  derive_opd(x);
  derive_ppo(x);
  const bool critic_started = c.adv_estimator == "gae";
  derive_worker(x, "actor_train", c.actor_train, true);
  derive_worker(x, "actor_infer", c.actor_infer, true);
  if (!c.opd_teachers.empty()) {
    for (size_t i = 0; i < c.opd_teachers.size(); ++i) {
      const std::string key = opd_teacher_key(c, i);
      WorkerConfig& t = c.opd_teachers[i].second;
      derive_worker(x, key, t, true);
      check_platform_strategy(x, key, t);
      check_model_role(x, key, t);
    }
    c.reference = c.opd_teachers.front().second;
  } else if (reference_from_actor(c)) {
    if (x.has("reference"))
      x.warn("reference", "ignored under LoRA (actor_train.model_args.lora_target): actor_train computes the "
                          "reference log-probs with its adapters disabled, as ROLL does");
  } else if (c.enable_reference) {
    derive_worker(x, "reference", c.reference, true);
  } else if (c.reference.device_mapping) {
    derive_worker(x, "reference", c.reference, false);
  }
  check_lora_roles(x);
  if (critic_started) {
    derive_worker(x, "critic", c.critic, true);
    if (!c.critic.model_args.model_name_or_path)
      x.error("reward_pretrain", "adv_estimator gae starts a critic: set reward_pretrain or "
                                 "critic.model_args.model_name_or_path");
  }
  check_infer_strategy(x);
  for (const char* role : {"actor_train", "actor_infer", "reference", "critic"}) {
    const WorkerConfig& w = std::string(role) == "actor_train"   ? c.actor_train
                            : std::string(role) == "actor_infer" ? c.actor_infer
                            : std::string(role) == "reference"   ? c.reference
                                                                 : c.critic;
    if (std::string(role) == "critic" && !critic_started) continue;
    if (std::string(role) == "reference" && (!c.enable_reference || !c.opd_teachers.empty())) continue;
    check_platform_strategy(x, role, w);
    check_model_role(x, role, w);
  }
  check_generating_args(x, "actor_infer.generating_args", c.actor_infer.generating_args);
  if (c.actor_train.pg_variant && c.actor_train.worker_cls &&
      !c.actor_train.worker_cls->ends_with("ActorPGWorker"))
    x.warn("actor_train.pg_variant", "pg_variant is read only by ActorPGWorker (worker_cls "
                                     "roll.pipeline.rlvr.actor_pg_worker.ActorPGWorker); it has no effect here");
  if (c.actor_train.worker_cls && c.actor_train.worker_cls->ends_with("ActorPGWorker") && !c.actor_train.pg_variant)
    x.error("actor_train.pg_variant", "ActorPGWorker needs actor_train.pg_variant (vanilla, ppo, tis, topr, cispo, "
                                      "kimi15)");

  int64_t samples_per_step = c.rollout_batch_size;
  if (c.kind == PipelineKind::rlvr) {
    derive_rlvr(x);
    samples_per_step *= c.num_return_sequences_in_group;
    check_data_args(x, "actor_train.data_args", c.actor_train.data_args);
    if (c.validation) {
      check_data_args(x, "validation.data_args", c.validation->data_args);
      check_generating_args(x, "validation.generating_args", c.validation->generating_args);
    }
    for (const auto& [domain, r] : c.rewards)
      if (r.worker.worker_cls.value_or("").ends_with("LLMJudgeRewardWorker"))
        check_model_role(x, "rewards." + domain, r.worker);
    if (c.reward_model) derive_worker(x, "reward_model", *c.reward_model, true);
  } else {
    derive_agentic(x);
    check_partial_gpu_mode(x);
    if (c.reward) derive_worker(x, "reward", c.reward->worker, false);
  }
  derive_recompute(x, samples_per_step);
  check_colocation(x, critic_started);

  // Every device id must fit the node layout (docs/config.md): nodes = ceil((max id + 1) / devices per node).
  int max_id = -1;
  auto scan = [&](const WorkerConfig& w) {
    if (w.device_mapping)
      for (int id : *w.device_mapping) max_id = std::max(max_id, id);
  };
  scan(c.actor_train);
  scan(c.actor_infer);
  if (c.enable_reference) scan(c.reference);
  for (const auto& [name, t] : c.opd_teachers) scan(t);
  if (critic_started) scan(c.critic);
  for (const auto& [d, r] : c.rewards) scan(r.worker);
  if (c.reward_model) scan(*c.reward_model);
  if (c.num_gpus_per_node > 0 && max_id >= 0) {
    const int64_t nodes = max_id + 1 <= c.num_gpus_per_node ? 1 : ceil_div(max_id + 1, c.num_gpus_per_node);
    if (x.has("num_nodes") && c.num_nodes != nodes && c.num_nodes > 1)
      x.warn("num_nodes", fmt::format("num_nodes {} is replaced by {} derived from the device ids and "
                                      "num_gpus_per_node {}",
                                      c.num_nodes, nodes, c.num_gpus_per_node));
    c.num_nodes = nodes;
  }
}

}  // namespace roll::config
