// The memory plan (memory/): each term against values computed by hand from the formulas in
// docs/memory.md, the known-model table against the published parameter counts, and the seed's NPU
// configs: what fits, and the advice for the user's guide's 7B-on-4-NPUs OOM.
#include <gtest/gtest.h>

#include <filesystem>

#include "config_test_util.h"
#include "roll/config/placement.h"
#include "roll/core/error.h"
#include "roll/memory/memory_advice.h"
#include "roll/memory/memory_plan.h"
#include "roll/memory/memory_report.h"

using namespace roll;
using namespace roll::memory;

namespace {

int64_t part(const std::vector<Part>& parts, const std::string& name) {
  for (const auto& p : parts)
    if (p.name == name) return p.bytes;
  return -1;
}

// A shape small enough to count by hand: V 1000, H 64, 2 layers, 4 heads of 16, 2 KV heads, I 128.
ModelSize toy() {
  ModelSize m;
  m.model_type = "qwen2";
  m.vocab = 1000, m.hidden = 64, m.layers = 2, m.heads = 4, m.kv_heads = 2, m.head_dim = 16, m.intermediate = 128;
  m.attention_bias = true;
  m.tied_embeddings = true;
  m.max_position = 4096;
  return m;
}

config::LoadedConfig load_ascend(const std::string& name, int devices, std::vector<std::string> overrides = {}) {
  config::LoadRequest req;
  req.compose = {roll::testing::source_dir() + "/examples/ascend_examples", name, std::move(overrides)};
  req.platform = config::Platform::npu;
  req.devices_per_node = devices;
  return config::load_config(req);
}

MemoryPlan plan_of(const config::LoadedConfig& l, PlanRequest r = {}) {
  return plan_memory(l.config, config::make_placement_plan(l.config, l.platform), r);
}

// The RLVR test config over a tiny model directory `m` (V 1000, H 64, 2 layers, tied embeddings).
void write_tiny_rlvr(roll::testing::TempConfigDir& dir) {
  dir.write("m/config.json", R"({"model_type": "qwen2", "vocab_size": 1000, "hidden_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
    "tie_word_embeddings": true})");
  dir.write("c.yaml", roll::testing::kRlvrConfig);
}

}  // namespace

TEST(MemoryPlanModelSize, CountsMatchThePublishedParameterCounts) {
  // Qwen2.5-7B: 7,615,616,512; Qwen3-8B: 8,190,735,360; Qwen3-30B-A3B: 30.5 B total, 3.3 B active.
  auto q7 = model_size_from_table("/data/models/Qwen2.5-7B");
  ASSERT_TRUE(q7);
  EXPECT_EQ(q7->parameters(), 7615616512);
  auto q8 = model_size_from_table("Qwen/Qwen3-8B-Base");
  ASSERT_TRUE(q8);
  EXPECT_EQ(q8->parameters(), 8190735360);
  auto moe = model_size_from_table("Qwen/Qwen3-30B-A3B-Base");
  ASSERT_TRUE(moe);
  EXPECT_TRUE(moe->moe());
  EXPECT_EQ(moe->parameters(), 30532122624);
  EXPECT_EQ(moe->active_parameters(), 3353032704);
}

TEST(MemoryPlanModelSize, TableMatchesWholeSizesOnly) {
  EXPECT_EQ(model_size_from_table("Qwen/Qwen2.5-32B-Instruct")->hidden, 5120);  // not the 3B
  EXPECT_EQ(model_size_from_table("Qwen/Qwen2.5-3B")->hidden, 2048);
  EXPECT_EQ(model_size_from_table("Qwen2.5-Math-7B")->vocab, 152064);
  EXPECT_EQ(model_size_from_table("meta-llama/Llama-3.1-8B-Instruct")->vocab, 128256);
  EXPECT_EQ(model_size_from_table("Qwen/Qwen2.5-0.5B-Instruct")->source, "known model Qwen2.5-0.5B");
  EXPECT_FALSE(model_size_from_table("someone/Mistral-7B"));
}

TEST(MemoryPlanModelSize, ConfigJsonWithSparseLayers) {
  roll::testing::TempConfigDir dir;
  const std::string path = dir.write("m/config.json", R"({"model_type": "qwen2_moe", "vocab_size": 100,
    "hidden_size": 8, "num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 1,
    "intermediate_size": 32, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16,
    "shared_expert_intermediate_size": 24, "decoder_sparse_step": 2, "mlp_only_layers": [3]})");
  const ModelSize m = model_size_from_config_json(path);
  EXPECT_EQ(m.moe_layers, 1);  // layers 1 and 3 are sparse by the step; 3 is dense by mlp_only_layers
  EXPECT_EQ(m.head_dim, 4);
  EXPECT_TRUE(m.attention_bias);
  // attention: 8*8 + 2*8*4 + 8*8 + (8 + 2*4) = 208; dense MLP 3*8*32 = 768;
  // MoE MLP: 4*3*8*16 + 8*4 + (3*8*24 + 8) = 1536 + 32 + 584 = 2152; norms 16 per layer.
  const int64_t layers = 4 * (208 + 16) + 3 * 768 + 2152;
  EXPECT_EQ(m.parameters(), 100 * 8 * 2 + layers + 8);
  EXPECT_THROW(model_size_from_config_json(dir.write("bad/config.json", R"({"hidden_size": 8})")), ConfigError);
}

TEST(MemoryPlanTerms, TrainerStateByZeroStage) {
  const ModelSize m = toy();
  // 1000*64 + 2 * (64*64 + 2*64*32 + 64*64 + 64+64 + 3*64*128 + 128) + 64 = 64000 + 2*37120 + 64
  const int64_t n = 138304;
  ASSERT_EQ(m.parameters(), n);
  TrainerInputs t{m, 2, false, 4, 0};
  auto r = trainer_resident(t);
  EXPECT_EQ(part(r.device, "weights"), n * 2);
  EXPECT_EQ(part(r.device, "master weights"), n * 4);
  EXPECT_EQ(part(r.device, "optimizer state"), n * 8);
  EXPECT_EQ(part(r.device, "gradients"), n * 4);
  t.zero_stage = 3;
  r = trainer_resident(t);
  EXPECT_EQ(part(r.device, "weights"), n / 4 * 2);
  EXPECT_EQ(part(r.device, "gathered layers"), 2 * 37120 * 2);
  EXPECT_EQ(part(r.device, "master weights"), n / 4 * 4);
  EXPECT_EQ(part(r.device, "optimizer state"), n / 4 * 8);
  EXPECT_EQ(part(r.device, "gradients"), n / 4 * 4);
  EXPECT_EQ(part(r.device, "gradient buckets"), 2 * 37120 * 4);
  t.offload_optimizer = true;
  r = trainer_resident(t);
  EXPECT_EQ(part(r.device, "optimizer state"), -1);
  EXPECT_EQ(part(r.host, "optimizer state"), n / 4 * 8);
  EXPECT_EQ(part(r.host, "master weights"), n / 4 * 4);
  // fp32 model: the optimizer updates the weights themselves, no master copy.
  TrainerInputs fp32{m, 4, false, 1, 0};
  r = trainer_resident(fp32);
  EXPECT_EQ(part(r.device, "weights"), n * 4);
  EXPECT_EQ(part(r.device, "master weights"), -1);
}

TEST(MemoryPlanTerms, LoraTrainsOnlyTheAdapters) {
  TrainerInputs t{toy(), 2, false, 2, 2};
  t.lora_parameters = 1000;
  auto r = trainer_resident(t);
  EXPECT_EQ(part(r.device, "weights"), 138304 * 2);  // the frozen base is not sharded
  EXPECT_EQ(part(r.device, "LoRA adapters"), 4000);
  EXPECT_EQ(part(r.device, "master weights"), -1);  // fp32 adapters
  EXPECT_EQ(part(r.device, "optimizer state"), 500 * 8);
  EXPECT_EQ(part(r.device, "gradients"), 500 * 4);
}

TEST(MemoryPlanTerms, TrainingActivations) {
  ActivationInputs a;
  a.model = toy();
  a.dtype_bytes = 4;
  a.tokens = 256;
  a.seq_len = 128;
  a.gradient_checkpointing = true;
  auto parts = train_activations(a);
  // Per token and layer: 4 * (2*64 + 5*64 + 2*32 + 4*128) + 16*64 = 4096 + 1024 = 5120 bytes, and
  // the attention 128 keys * 4 heads * (4 + 2*4) = 6144 bytes.
  const int64_t layer = 256 * (5120 + 6144);
  EXPECT_EQ(part(parts, "checkpointed layer inputs"), 2 * 256 * 64 * 4);
  EXPECT_EQ(part(parts, "recomputed layer"), 2 * layer);
  EXPECT_EQ(part(parts, "attention mask"), 256 * 128 * 4);
  EXPECT_EQ(part(parts, "LM-head gradient"), 1000 * 64 * 8);
  EXPECT_EQ(part(parts, "LM-head chunk"), 256 * 1000 * (4 + 16));
  EXPECT_EQ(part(parts, "embedding gradient"), 1000 * 64 * 4);
  // Tied embeddings: the head's and the embedding's gradients summed (fp32 model: 4 bytes), widened.
  EXPECT_EQ(part(parts, "widened vocabulary gradient"), 1000 * 64 * (4 + 4));
  a.frozen_embeddings = true;  // LoRA
  EXPECT_EQ(part(train_activations(a), "embedding gradient"), -1);
  a.frozen_embeddings = false;
  a.gradient_checkpointing = false;
  parts = train_activations(a);
  EXPECT_EQ(part(parts, "saved activations"), 2 * layer);
  EXPECT_EQ(part(parts, "backward temporaries"), layer);
  a.flash_attention = true;  // accelerators' fa2: no [seq, seq] tensors
  parts = train_activations(a);
  EXPECT_EQ(part(parts, "saved activations"), 2 * 256 * 5120);
  EXPECT_EQ(part(parts, "attention mask"), -1);
}

TEST(MemoryPlanTerms, ForwardActivations) {
  ActivationInputs a;
  a.model = toy();
  a.dtype_bytes = 2;
  a.tokens = 64;
  a.seq_len = 32;
  auto parts = forward_activations(a);
  // 64 * 2 * (3*64 + 64 + 2*32 + 2*64 + 3*128) + 64 * 32 * 4 heads * (2*2 + 8)
  EXPECT_EQ(part(parts, "layer temporaries"), 64 * 2 * 832 + 64 * 32 * 4 * 12);
  EXPECT_EQ(part(parts, "LM-head chunk"), 64 * 1000 * 14);
  EXPECT_EQ(part(parts, "hidden states"), 2 * 64 * 64 * 2);
}

TEST(MemoryPlanTerms, EngineKvCacheReservedOnDevicesAndWrittenOnCpu) {
  EngineInputs e;
  e.model = toy();  // 138304 parameters; K/V: 2 layers * 2 * 2 heads * 16 * 2 bytes = 256 bytes per token
  e.dtype_bytes = 2;
  e.capacity_bytes = 1'000'000;
  e.gpu_memory_utilization = 0.5;
  e.block_size = 16;  // 4096 bytes per block
  e.max_model_len = 256;  // 16 blocks per sequence
  e.max_num_seqs = 100;
  auto parts = engine_memory(e);
  // (500000 - 276608) / 4096 = 54 blocks: 3 sequences of max_model_len.
  EXPECT_EQ(parts.kv_blocks, 54);
  EXPECT_EQ(parts.concurrent_sequences, 3);
  EXPECT_EQ(part(parts.resident, "KV cache"), 54 * 4096);
  EXPECT_EQ(part(parts.resident, "weights"), 276608);
  e.lazy_kv = true;  // CPU: only written blocks count, 5 sequences of 40 tokens = 5 * 3 blocks
  e.sequences_over_run = 5;
  e.seq_len = 40;
  parts = engine_memory(e);
  EXPECT_EQ(part(parts.resident, "KV cache"), 15 * 4096);
  e.max_num_seqs = 2;  // never more than every sequence at full length: 32 blocks
  e.lazy_kv = false;
  EXPECT_EQ(engine_memory(e).kv_blocks, 32);
}

TEST(MemoryPlanCapacity, NpuFractionNamedGpusAndHostRam) {
  CapacityRequest r;
  r.platform = config::Platform::npu;
  r.npu_memory_fraction = 0.96;
  EXPECT_EQ(device_capacity(r).bytes, static_cast<int64_t>(64e9 * 0.96));
  r.platform = config::Platform::cuda;
  r.device_name = "H100";
  EXPECT_EQ(device_capacity(r).bytes, static_cast<int64_t>(80e9));
  r.device_name = "A100-40GB";
  EXPECT_EQ(device_capacity(r).bytes, static_cast<int64_t>(40e9));
  r.device_name = "";
  EXPECT_EQ(device_capacity(r).bytes, 0);  // unknown: no verdict
  r.device_name = "TPU";
  EXPECT_THROW(device_capacity(r), ConfigError);
  r.platform = config::Platform::cpu;
  r.host_memory_bytes = 24LL << 30;
  EXPECT_EQ(device_capacity(r).bytes, static_cast<int64_t>((24LL << 30) * 0.95));  // the system keeps 5%
  EXPECT_TRUE(device_capacity(r).shared_by_node);
}

TEST(MemoryPlanSeed, TheUsersConfigsFitTheirNpus) {
  for (auto [name, devices] : {std::pair<const char*, int>{"agentic_frozen_lake_npu", 8},
                               {"qwen3_8b_rlvr_deepspeed", 16}, {"rlvr_npu_multinode", 8}}) {
    const auto plan = plan_of(load_ascend(name, devices));
    EXPECT_TRUE(plan.complete()) << name;
    EXPECT_TRUE(plan.fits()) << name << "\n" << format_memory_plan(plan, {});
  }
}

TEST(MemoryPlanSeed, SevenBOnFourNpusWithZero2OverflowsAndGetsTheAdvice) {
  // The user's guide's troubleshooting: a 7B model trained on 4 NPUs (the 16-NPU example with
  // Qwen2.5-7B, ZeRO-2 and two samples per micro-batch).
  const std::vector<std::string> variant = {"pretrain=Qwen/Qwen2.5-7B", "reward_pretrain=Qwen/Qwen2.5-7B",
                                            "actor_train.device_mapping=list(range(0,4))",
                                            "actor_train.strategy_args.strategy_config=${deepspeed_zero2}",
                                            "actor_train.training_args.per_device_train_batch_size=2",
                                            "actor_train.training_args.gradient_accumulation_steps=16"};
  const auto l = load_ascend("qwen3_8b_rlvr_deepspeed", 16, variant);
  const auto plan = plan_of(l);
  ASSERT_TRUE(plan.complete());
  EXPECT_FALSE(plan.fits()) << format_memory_plan(plan, {});
  const Replan replan = [&](const std::vector<std::string>& extra) -> std::optional<MemoryPlan> {
    auto all = variant;
    all.insert(all.end(), extra.begin(), extra.end());
    try {
      return plan_of(load_ascend("qwen3_8b_rlvr_deepspeed", 16, all));
    } catch (const std::exception&) {
      return std::nullopt;
    }
  };
  const auto advice = memory_advice(l.config, plan, replan);
  ASSERT_FALSE(advice.empty());
  EXPECT_TRUE(advice.front().fits) << format_memory_plan(plan, advice);
  bool zero3 = false;
  for (const auto& a : advice)
    for (const auto& o : a.overrides) zero3 |= o == "actor_train.strategy_args.strategy_config=${deepspeed_zero3}";
  EXPECT_TRUE(zero3) << format_memory_plan(plan, advice);
  // Each fitting override set loads back and fits.
  for (const auto& a : advice)
    if (a.fits) {
      auto again = replan(a.overrides);
      ASSERT_TRUE(again);
      EXPECT_TRUE(again->fits());
    }
}

TEST(MemoryPlanSeed, SharedNpusTimeShareAsRollOffloads) {
  // rlvr_npu_multinode: the engine and the reference share node 1's NPUs, so vLLM sleeps while the
  // reference computes and the reference's states are loaded only for its calls.
  const auto plan = plan_of(load_ascend("rlvr_npu_multinode", 8));
  const WorkerMemory* infer = plan.find("actor_infer-0-G0");
  const WorkerMemory* ref = plan.find("reference-0-G0");
  ASSERT_TRUE(infer && ref);
  EXPECT_TRUE(infer->offloads);
  EXPECT_TRUE(ref->offloads);
  const int64_t process = process_base_bytes(config::Platform::npu);
  EXPECT_EQ(infer->phase_bytes("log_probs"), process);
  EXPECT_EQ(ref->phase_bytes("generate"), process);
  // vLLM's share is the whole engine: 0.8 of 64 GB, less what does not fill a whole KV block
  // (2 x 28 layers x 4 KV heads x 128 x 2 bytes x 16 tokens = 917504 bytes).
  const int64_t share = static_cast<int64_t>(64e9 * 0.8), block = 917504;
  EXPECT_LE(infer->phase_bytes("generate"), share);
  EXPECT_GT(infer->phase_bytes("generate"), share - block);
  for (const auto& d : plan.devices) {
    if (d.device == 8) {
      EXPECT_EQ(d.peak_bytes, infer->phase_bytes("generate") + process);
    }
  }
  // The trainers (node 0, ZeRO-3 with CPU offload) keep the optimizer state in host memory.
  const WorkerMemory* train = plan.find("actor_train-0-G0");
  ASSERT_TRUE(train);
  EXPECT_EQ(part(train->states, "optimizer state"), -1);
  EXPECT_GT(part(train->host, "optimizer state"), 0);
}

TEST(MemoryPlanSeed, CpuKeepsEverythingAndCountsTheSyncFile) {
  roll::testing::TempConfigDir dir;
  write_tiny_rlvr(dir);
  const auto l = roll::testing::load_in(dir, "", "c", {"pretrain=" + dir.path() + "/m"});
  const auto plan = plan_of(l);
  ASSERT_TRUE(plan.complete());
  ASSERT_EQ(plan.devices.size(), 1u);  // one node: one pool
  const WorkerMemory* train0 = plan.find("actor_train-0-G0");
  const WorkerMemory* train1 = plan.find("actor_train-1-G1");
  ASSERT_TRUE(train0 && train1);
  EXPECT_FALSE(train0->offloads);
  EXPECT_EQ(part(train0->states, "weight sync file"), 138304 * 2);  // rank 0 only
  EXPECT_EQ(part(train1->states, "weight sync file"), -1);
  // The infer ranks sit on other slots of the node: they copy the weights out of the mapped file.
  const WorkerMemory* infer = plan.find("actor_infer-0-G2");
  ASSERT_TRUE(infer);
  EXPECT_EQ(part(infer->states, "weight sync file"), 138304 * 2);
  // Each keeps the freed blocks of its busiest phase (core/cpu_block_cache.h) through its other
  // phases: the trainer's activations while the engine generates, the engine's step buffers while
  // the trainer trains (this tiny model's are far below the cache's limit).
  auto phase_sum = [](const WorkerMemory& w, const std::string& phase) {
    int64_t n = 0;
    if (w.transient.count(phase))
      for (const auto& p : w.transient.at(phase))
        if (p.name != "cached blocks") n += p.bytes;
    return n;
  };
  const int64_t train_busiest = std::max(phase_sum(*train0, "train"), phase_sum(*train0, "log_probs"));
  ASSERT_GT(train_busiest, 0);
  ASSERT_TRUE(train0->transient.count("generate"));
  EXPECT_EQ(part(train0->transient.at("generate"), "cached blocks"), train_busiest);
  EXPECT_EQ(part(train0->transient.at("train"), "cached blocks"), train_busiest - phase_sum(*train0, "train"));
  EXPECT_EQ(part(infer->transient.at("generate"), "cached blocks"), -1);
  ASSERT_TRUE(infer->transient.count("train"));
  EXPECT_EQ(part(infer->transient.at("train"), "cached blocks"), phase_sum(*infer, "generate"));
  // Every worker's peak counts in the node's total.
  int64_t sum_train = 0;
  for (const auto& w : plan.workers) sum_train += w.phase_bytes("train");
  EXPECT_EQ(plan.devices[0].phase_bytes.at("train"), sum_train + process_base_bytes(config::Platform::cpu));
}

TEST(MemoryPlanSeed, CpuBlockCacheLimitComesFromSystemEnvs) {
  roll::testing::TempConfigDir dir;
  write_tiny_rlvr(dir);
  const auto off = roll::testing::load_in(dir, "", "c",
                                          {"pretrain=" + dir.path() + "/m", "system_envs.ROLL_CPU_BLOCK_CACHE_MB=0"});
  for (const auto& w : plan_of(off).workers)
    for (const auto& [phase, parts] : w.transient) EXPECT_EQ(part(parts, "cached blocks"), -1) << w.worker << " " << phase;
  const auto bad = roll::testing::load_in(dir, "", "c",
                                          {"pretrain=" + dir.path() + "/m", "system_envs.ROLL_CPU_BLOCK_CACHE_MB=lots"});
  try {
    plan_of(bad);
    FAIL() << "a malformed ROLL_CPU_BLOCK_CACHE_MB was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "system_envs.ROLL_CPU_BLOCK_CACHE_MB");
    EXPECT_NE(std::string(e.what()).find("'lots'"), std::string::npos) << e.what();
  }
}
