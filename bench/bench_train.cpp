// Training throughput: tokens/s and MFU of whole optimizer steps through TrainStrategy (forward,
// backward, fp32 gradient reduction, grad-norm clip, AdamW, weight re-share) against the measured
// bf16 GEMM peak of the same thread count. One rank, or two ranks as two processes of this binary
// over Gloo (each with half the threads), with and without per-layer gradient checkpointing.
// Prints JSON lines.
//
//   bench_train [--smoke] [--threads 2] [--presets small,qwen2.5-0.5b-shape] [--ranks 1,2]
//               [--dtypes bf16,fp32] [--gc both|on|off] [--seq 256] [--micro 2] [--ga 2] [--steps 3]
//               [--warmup 1] [--zero-2rank 3] [--lora-ranks 0,16] [--lora-target q_proj,k_proj,v_proj,o_proj]
//               [--rounds 1] [--head-chunk-tokens N] [--trace FILE] [--op-table FILE]
//
// --trace writes a chrome trace of ATen's ops in the last measured step; --op-table writes, for the
// same step, one JSON line per (op, input shapes) with its self time, most expensive first.
// --head-chunk-tokens: rows of the LM head per chunk (Transformer::token_log_probs); by default
// what the training workers use (workers/trim_padding.h lm_head_chunk_tokens).
// --lora-ranks: 0 trains the full model; R > 0 trains rank-R LoRA adapters on --lora-target over a
// frozen base (docs/lora.md). With any R > 0 every configuration runs in a process of its own, so
// that `peak_rss_mb` (the process's peak resident set) compares them. --rounds repeats the whole
// list, so that A B A B interleaves the configurations.
//
// MFU counts model FLOPs (3 x forward: linear layers, attention scores/values, LM head); HFU adds
// what the implementation recomputes (the checkpointed layers' forward, the chunked LM head's
// logits in backward). The peak is the best of the three GEMM layouts training uses (x·Wᵀ, g·W,
// gᵀ·x) at a 0.5B-layer shape, measured for the dtype and the threads of one rank, times the ranks.
// A configuration whose optimizer state would not fit in MemAvailable is skipped (reported).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "roll/comm/process_group.h"
#include "roll/comm/store.h"
#include "roll/core/cpu_block_cache.h"
#include "roll/model/lora.h"
#include "roll/model/model_init.h"
#include "roll/model/transformer.h"
#include "roll/train/strategy.h"
#include "roll/workers/trim_padding.h"

extern char** environ;

using namespace roll;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  bool smoke = false;
  int threads = 2;
  std::vector<std::string> presets = {"small", "qwen2.5-0.5b-shape"};
  std::vector<int> ranks = {1, 2};
  std::vector<std::string> dtypes = {"bf16", "fp32"};
  int64_t warmup = 1;
  std::string gc = "both";
  int64_t seq = 256, micro = 2, ga = 2, steps = 3;
  int zero_2rank = 3;  // ZeRO stage with 2 ranks: two full 0.5B AdamW states do not fit in this machine's memory
  std::vector<int64_t> lora_ranks = {0};
  std::string lora_target = "q_proj,k_proj,v_proj,o_proj";
  int rounds = 1;
  std::string trace;     // chrome trace of ATen's ops in the last measured step (one rank, one configuration)
  std::string op_table;  // self time per (op, input shapes) of that step, JSON lines
  int64_t head_chunk = 0;  // 0: the workers' lm_head_chunk_tokens
  // Child mode (one rank of a multi-rank or isolated measurement).
  int child_rank = -1, child_world = 1, child_port = 0, child_gc = 1;
  int64_t child_lora = 0;
  std::string child_preset, child_dtype = "bf16";
};

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

at::ScalarType dtype_of(const std::string& name) { return name == "fp32" ? at::kFloat : at::kBFloat16; }

double gemm_peak(at::ScalarType dtype, int threads, bool smoke) {
  at::set_num_threads(threads);
  const int64_t m = 256, k = smoke ? 128 : 896, n = smoke ? 512 : 4864;
  at::Tensor x = at::randn({m, k}).to(dtype), w = at::randn({n, k}).to(dtype), g = at::randn({m, n}).to(dtype);
  double best = 1e30;
  for (int layout = 0; layout < 3; ++layout) {
    auto run = [&] {
      if (layout == 0) at::linear(x, w);   // forward
      else if (layout == 1) at::mm(g, w);  // input gradient
      else at::mm(g.t(), x);               // weight gradient
    };
    run();
    // Best of several: on a shared VM single products vary by a factor of up to 2 from one moment
    // to the next, and a low peak would overstate the MFU.
    for (int i = 0; i < 6; ++i) {
      auto t0 = Clock::now();
      run();
      best = std::min(best, seconds_since(t0));
    }
  }
  return 2.0 * m * k * n / best / 1e9;
}

double load1() {
  double l = -1;
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &l) != 1) l = -1;
    std::fclose(f);
  }
  return l;
}

double mem_available_gb() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 1e9;
  char key[64];
  long long kb = 0;
  double out = 1e9;
  while (std::fscanf(f, "%63s %lld kB", key, &kb) == 2)
    if (std::strcmp(key, "MemAvailable:") == 0) out = kb / 1048576.0;
  std::fclose(f);
  return out;
}

// Bytes per parameter a rank keeps for AdamW training: weights, fp32 master (bf16 only),
// fp32 gradients, two fp32 moments; divided by the ranks where the stage shards them.
double train_bytes_per_param(const std::string& dtype, int world, int stage) {
  const double weights = dtype == "bf16" ? 2 : 4, master = dtype == "bf16" ? 4 : 0;
  const double w = std::max(1, world);
  return (stage >= 3 ? weights / w : weights) + (stage >= 1 ? (master + 8) / w : master + 8) +
         (stage >= 2 ? 4 / w : 4);
}

struct Flops {
  double model = 0, hardware = 0;
};

// FLOPs of one optimizer step over `tokens` tokens in sequences of T.
// `micro_rows`: log-prob rows of one micro-batch; up to hidden_size of them the LM head's backward
// reuses the forward's log-softmax (model/autograd_ops.cpp), above it recomputes the logits.
Flops step_flops(const model::ModelConfig& c, int64_t tokens, int64_t T, int64_t micro_rows, bool gc) {
  const double H = c.hidden_size, D = c.head_dim, L = c.num_hidden_layers, F = c.intermediate_size;
  const double q = c.num_attention_heads * D, kv = c.num_key_value_heads * D, V = c.vocab_size;
  const double layers_fwd = 2.0 * L * (H * q + 2 * H * kv + q * H + 3 * H * F) * tokens + 2.0 * L * 2.0 * T * q * tokens;
  const double head_fwd = 2.0 * H * V * tokens;
  Flops f;
  f.model = 3.0 * (layers_fwd + head_fwd);
  f.hardware = f.model + (gc ? layers_fwd : 0.0) + (micro_rows > c.hidden_size ? head_fwd : 0.0);
  return f;
}

// Parameters of a config without building it (a 0.5B model is 2 GB to count otherwise).
int64_t head_chunk_of(const Args& a, const model::ModelConfig& c) {
  return a.head_chunk > 0 ? a.head_chunk : workers::lm_head_chunk_tokens(c);
}

double count_params(const model::ModelConfig& c) {
  const double H = c.hidden_size, D = c.head_dim, F = c.intermediate_size, V = c.vocab_size;
  const double q = c.num_attention_heads * D, kv = c.num_key_value_heads * D;
  double layer = H * q + 2 * H * kv + q * H + 3 * H * F + 2 * H;
  if (c.attention_bias) layer += q + 2 * kv;
  if (c.qk_norm) layer += 2 * D;
  return V * H * (c.tie_word_embeddings ? 1 : 2) + c.num_hidden_layers * layer + H;
}

model::ModelConfig config_of(const std::string& preset, bool smoke) {
  model::ModelConfig c = model::preset_config(smoke ? "tiny" : preset, "qwen2");
  if (smoke) c.vocab_size = 512;
  return c;
}

struct Measured {
  double step_s = 0, fwd_bwd_s = 0, optimizer_s = 0;
  int64_t params = 0;
  long peak_rss_kb = -1;  // of the process that measured, when it measured nothing else
  std::string describe;
};

long peak_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// Self time (an op's time less that of the ops it called) per (op, input shapes), summed over the
// recorded events of every thread, written most expensive first.
void write_op_table(const torch::autograd::profiler::thread_event_lists& lists, const std::string& path) {
  using torch::autograd::profiler::EventKind;
  using torch::autograd::profiler::LegacyEvent;
  struct Row {
    double self_us = 0;
    int64_t calls = 0;
  };
  std::map<std::string, Row> rows;
  for (const auto& events : lists) {
    struct Open {
      const LegacyEvent* push;
      double child_us;
    };
    std::vector<Open> stack;
    for (const LegacyEvent& e : events) {
      if (e.kind() == EventKind::PushRange) {
        stack.push_back({&e, 0});
      } else if (e.kind() == EventKind::PopRange && !stack.empty()) {
        const Open open = stack.back();
        stack.pop_back();
        const double us = open.push->cpuElapsedUs(e);
        if (!stack.empty()) stack.back().child_us += us;
        std::ostringstream key;
        key << open.push->name() << '\t';
        for (const auto& shape : open.push->shapes()) {
          key << '[';
          for (size_t i = 0; i < shape.size(); ++i) key << (i ? "," : "") << shape[i];
          key << ']';
        }
        Row& r = rows[key.str()];
        r.self_us += us - open.child_us;
        ++r.calls;
      }
    }
  }
  std::vector<std::pair<std::string, Row>> sorted(rows.begin(), rows.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) { return x.second.self_us > y.second.self_us; });
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return;
  for (const auto& [key, r] : sorted) {
    const size_t tab = key.find('\t');
    std::fprintf(f, "{\"op\":\"%s\",\"shapes\":\"%s\",\"self_ms\":%.3f,\"calls\":%lld}\n", key.substr(0, tab).c_str(),
                 key.substr(tab + 1).c_str(), r.self_us / 1000, static_cast<long long>(r.calls));
  }
  std::fclose(f);
}

// Runs warm-up + measured steps on this rank; every rank calls it together.
Measured measure(const Args& a, const std::string& preset, const std::string& dtype, bool gc, int64_t lora_rank,
                 std::shared_ptr<comm::ProcessGroup> pg) {
  const int world = pg ? pg->size() : 1, rank = pg ? pg->rank() : 0;
  const model::ModelConfig c = config_of(preset, a.smoke);
  auto model = model::Transformer::random(c, dtype_of(dtype), 1, 0.02);
  if (lora_rank > 0)
    model->add_lora(model::lora_config_from_args(a.lora_target, lora_rank, std::nullopt, 0, "--lora-target"), 2);
  Measured m;
  m.params = model->num_parameters();
  train::TrainOptions o;
  o.learning_rate = 1e-5;
  o.lr_scheduler_type = "constant";
  o.gradient_accumulation_steps = a.ga;
  o.gradient_checkpointing = gc;
  o.max_grad_norm = 1.0;
  o.zero_stage = world > 1 ? a.zero_2rank : 0;
  o.total_steps = a.steps + a.warmup;
  train::TrainStrategy s(model, o, pg);
  m.describe = s.describe();
  const int64_t T = a.seq, B = a.micro;
  at::Tensor mask = at::ones({B, T}, at::kLong);
  at::Tensor pos = at::arange(T, at::kLong).unsqueeze(0).expand({B, T}).contiguous();
  const double tokens_global = static_cast<double>(B * (T - 1) * a.ga * world);
  std::vector<double> step_t, fb_t, opt_t;
  for (int64_t step = 0; step < a.steps + a.warmup; ++step) {
    at::manual_seed(1000 * step + rank);
    std::vector<at::Tensor> ids;
    for (int64_t i = 0; i < a.ga; ++i) ids.push_back(at::randint(0, c.vocab_size, {B, T}, at::kLong));
    std::unique_ptr<torch::autograd::profiler::RecordProfile> trace;
    if (!a.trace.empty() && rank == 0 && step + 1 == a.steps + a.warmup)
      trace = std::make_unique<torch::autograd::profiler::RecordProfile>(a.trace);
    std::unique_ptr<torch::autograd::profiler::TLSLegacyProfilerGuard> op_table;
    if (!a.op_table.empty() && rank == 0 && step + 1 == a.steps + a.warmup)
      op_table = std::make_unique<torch::autograd::profiler::TLSLegacyProfilerGuard>(
          torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::CPU, /*report_input_shapes=*/true),
          [path = a.op_table](const torch::autograd::profiler::thread_event_lists& lists) { write_op_table(lists, path); });
    auto t0 = Clock::now();
    for (int64_t i = 0; i < a.ga; ++i) {
      auto lp = s.log_probs(ids[i], mask, pos, false, head_chunk_of(a, c));
      // ROLL's token-mean over the global token count, times the loss scale (micro-batches x dp).
      s.backward(-lp.log_probs.sum() / tokens_global * static_cast<double>(a.ga * world));
    }
    const double fb = seconds_since(t0);
    auto t1 = Clock::now();
    s.step();
    const double op = seconds_since(t1);
    if (step < a.warmup) continue;  // warm-up: first-touch of the optimizer state, Gloo connections
    step_t.push_back(fb + op);
    fb_t.push_back(fb);
    opt_t.push_back(op);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  m.step_s = median(step_t);
  m.fwd_bwd_s = median(fb_t);
  m.optimizer_s = median(opt_t);
  // Whether the measured steps reused their blocks (misses stop growing after the warm-up).
  const core::CpuBlockCacheStats cache = core::cpu_block_cache_stats();
  std::fprintf(stderr, "block cache: hits %lld misses %lld live %.2f GB cached %.2f GB\n", (long long)cache.hits,
               (long long)cache.misses, cache.live_bytes / 1e9, cache.cached_bytes / 1e9);
  return m;
}

void report(const Args& a, const std::string& preset, const std::string& dtype, int world, bool gc,
            int64_t lora_rank, const Measured& m, double peak, int threads_per_rank, double load) {
  const model::ModelConfig c = config_of(preset, a.smoke);
  const int64_t tokens = a.micro * a.seq * a.ga * world;
  const Flops f = step_flops(c, tokens, a.seq, a.micro * (a.seq - 1), gc);
  const double gflops = f.model / m.step_s / 1e9;
  std::printf(
      "{\"bench\":\"train_step\",\"preset\":\"%s\",\"params\":%lld,\"dtype\":\"%s\",\"ranks\":%d,"
      "\"threads_per_rank\":%d,\"zero_stage\":%d,\"grad_ckpt\":%s,\"micro_batch\":%lld,\"seq\":%lld,\"ga\":%lld,"
      "\"tokens_per_step\":%lld,\"step_s\":%.3f,\"fwd_bwd_s\":%.3f,\"optimizer_s\":%.3f,\"tokens_per_s\":%.1f,"
      "\"model_gflops\":%.2f,\"gemm_peak_gflops\":%.2f,\"mfu\":%.3f,\"hfu\":%.3f,\"load1\":%.2f,"
      "\"lora_rank\":%lld,\"lora_target\":\"%s\",\"peak_rss_mb\":%.1f,\"head_chunk_tokens\":%lld}\n",
      a.smoke ? "tiny" : preset.c_str(), static_cast<long long>(m.params), dtype.c_str(), world, threads_per_rank,
      world > 1 ? a.zero_2rank : 0, gc ? "true" : "false", static_cast<long long>(a.micro),
      static_cast<long long>(a.seq), static_cast<long long>(a.ga), static_cast<long long>(tokens), m.step_s,
      m.fwd_bwd_s, m.optimizer_s, tokens / m.step_s, gflops, peak, gflops / peak, f.hardware / m.step_s / 1e9 / peak,
      load, static_cast<long long>(lora_rank), lora_rank > 0 ? a.lora_target.c_str() : "",
      m.peak_rss_kb >= 0 ? m.peak_rss_kb / 1024.0 : -1.0, static_cast<long long>(head_chunk_of(a, c)));
  std::fflush(stdout);
}

int run_child(const Args& a) {
  at::set_num_threads(std::max(1, a.threads / a.child_world));
  auto store = comm::Store::tcp({"127.0.0.1", static_cast<uint16_t>(a.child_port), false, std::chrono::minutes(5)});
  comm::GroupOptions go;
  go.name = "bench";
  go.timeout = std::chrono::minutes(30);
  auto pg = comm::ProcessGroup::create(store, a.child_rank, a.child_world, go);
  Measured m = measure(a, a.child_preset, a.child_dtype, a.child_gc != 0, a.child_lora, pg);
  if (a.child_rank == 0) {
    // The parent measured the peak; hand the numbers back on stdout as one line it parses.
    std::printf("CHILD %.6f %.6f %.6f %lld %ld\n", m.step_s, m.fwd_bwd_s, m.optimizer_s,
                static_cast<long long>(m.params), peak_rss_kb());
    std::fflush(stdout);
  }
  return 0;
}

// Runs `world` ranks of this binary for one configuration; returns rank 0's measurement.
Measured run_ranks(const Args& a, const std::string& exe, const std::string& preset, const std::string& dtype,
                   bool gc, int64_t lora_rank, int world) {
  auto store = comm::Store::tcp({"127.0.0.1", 0, true, std::chrono::minutes(5)});
  const std::string out = std::filesystem::temp_directory_path() / ("bench_train_rank0_" + std::to_string(getpid()));
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> args{exe,           "--child-rank",  std::to_string(r),
                                  "--child-world", std::to_string(world), "--child-port",
                                  std::to_string(store->port()), "--child-preset", preset,
                                  "--child-gc",  gc ? "1" : "0",  "--child-dtype", dtype, "--warmup",
                                  std::to_string(a.warmup), "--threads",
                                  std::to_string(a.threads), "--seq", std::to_string(a.seq),
                                  "--micro", std::to_string(a.micro), "--ga", std::to_string(a.ga),
                                  "--steps", std::to_string(a.steps), "--zero-2rank", std::to_string(a.zero_2rank),
                                  "--child-lora", std::to_string(lora_rank), "--lora-target", a.lora_target,
                                  "--head-chunk-tokens", std::to_string(a.head_chunk)};
    if (a.smoke) args.push_back("--smoke");
    if (!a.trace.empty()) args.insert(args.end(), {"--trace", a.trace});
    if (!a.op_table.empty()) args.insert(args.end(), {"--op-table", a.op_table});
    std::vector<char*> argv;
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (r == 0) posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    if (posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), environ) != 0) {
      std::fprintf(stderr, "posix_spawn failed\n");
      std::exit(1);
    }
    posix_spawn_file_actions_destroy(&fa);
    pids.push_back(pid);
  }
  bool ok = true;
  for (pid_t p : pids) {
    int st = 0;
    waitpid(p, &st, 0);
    ok = ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  Measured m;
  std::FILE* f = std::fopen(out.c_str(), "r");
  long long params = 0;
  if (!ok || !f ||
      std::fscanf(f, "CHILD %lf %lf %lf %lld %ld", &m.step_s, &m.fwd_bwd_s, &m.optimizer_s, &params, &m.peak_rss_kb) !=
          5) {
    std::fprintf(stderr, "bench_train: a rank failed (%s, %d ranks)\n", preset.c_str(), world);
    std::exit(1);
  }
  m.params = params;
  std::fclose(f);
  std::filesystem::remove(out);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (k == "--smoke") a.smoke = true;
    else if (k == "--threads") a.threads = std::stoi(next());
    else if (k == "--presets") a.presets = split(next());
    else if (k == "--ranks") {
      a.ranks.clear();
      for (auto& r : split(next())) a.ranks.push_back(std::stoi(r));
    } else if (k == "--gc") a.gc = next();
    else if (k == "--seq") a.seq = std::stoll(next());
    else if (k == "--micro") a.micro = std::stoll(next());
    else if (k == "--ga") a.ga = std::stoll(next());
    else if (k == "--steps") a.steps = std::stoll(next());
    else if (k == "--zero-2rank") a.zero_2rank = std::stoi(next());
    else if (k == "--warmup") a.warmup = std::stoll(next());
    else if (k == "--dtypes") a.dtypes = split(next());
    else if (k == "--lora-ranks") {
      a.lora_ranks.clear();
      for (auto& r : split(next())) a.lora_ranks.push_back(std::stoll(r));
    } else if (k == "--lora-target") a.lora_target = next();
    else if (k == "--trace") a.trace = next();
    else if (k == "--op-table") a.op_table = next();
    else if (k == "--head-chunk-tokens") a.head_chunk = std::stoll(next());
    else if (k == "--rounds") a.rounds = std::max(1, std::stoi(next()));
    else if (k == "--child-lora") a.child_lora = std::stoll(next());
    else if (k == "--child-dtype") a.child_dtype = next();
    else if (k == "--child-rank") a.child_rank = std::stoi(next());
    else if (k == "--child-world") a.child_world = std::stoi(next());
    else if (k == "--child-port") a.child_port = std::stoi(next());
    else if (k == "--child-preset") a.child_preset = next();
    else if (k == "--child-gc") a.child_gc = std::stoi(next());
    else {
      std::fprintf(stderr, "bench_train: unknown argument %s\n", k.c_str());
      return 2;
    }
  }
  // As every roll process does (ROLL_CPU_BLOCK_CACHE_MB=0 measures without it).
  roll::core::install_cpu_block_cache(roll::core::cpu_block_cache_limit_from_env());
  if (a.child_rank >= 0) return run_child(a);
  if (a.smoke) {
    a.presets = {"tiny"};
    a.seq = 32;
    a.steps = 2;
  }
  // Peaks per dtype and thread count (one rank uses all threads; two ranks half each).
  std::map<std::pair<std::string, int>, double> peaks;
  auto peak_of = [&](const std::string& dtype, int threads) {
    auto key = std::make_pair(dtype, threads);
    if (!peaks.count(key)) {
      peaks[key] = gemm_peak(dtype_of(dtype), threads, a.smoke);
      std::printf("{\"bench\":\"gemm_peak\",\"dtype\":\"%s\",\"threads\":%d,\"gflops\":%.2f,\"load1\":%.2f}\n",
                  dtype.c_str(), threads, peaks[key], load1());
      std::fflush(stdout);
    }
    return peaks[key];
  };
  std::vector<bool> gcs;
  if (a.gc != "off") gcs.push_back(true);
  if (a.gc != "on") gcs.push_back(false);
  const bool isolate = std::any_of(a.lora_ranks.begin(), a.lora_ranks.end(), [](int64_t r) { return r > 0; });
  for (int round = 0; round < a.rounds; ++round)
    for (const std::string& preset : a.presets)
      for (const std::string& dtype : a.dtypes)
        for (int world : a.ranks)
          for (bool gc : gcs)
            for (int64_t lora : a.lora_ranks) {
              const int tpr = std::max(1, a.threads / world);
              const double peak = world * peak_of(dtype, tpr);
              const model::ModelConfig c = config_of(preset, a.smoke);
              const double params = count_params(c);
              // LoRA: the frozen base only (the adapters and their state are small).
              const double per_param =
                  lora > 0 ? (dtype == "bf16" ? 2 : 4) : train_bytes_per_param(dtype, world, world > 1 ? a.zero_2rank : 0);
              const double need_gb = world * (params * per_param / 1e9 + 1.0);
              if (need_gb > mem_available_gb() - 1.0) {
                std::printf("{\"bench\":\"train_step\",\"preset\":\"%s\",\"dtype\":\"%s\",\"ranks\":%d,\"grad_ckpt\":%s,"
                            "\"lora_rank\":%lld,\"skipped\":\"needs ~%.1f GB, %.1f GB available\"}\n",
                            preset.c_str(), dtype.c_str(), world, gc ? "true" : "false", static_cast<long long>(lora),
                            need_gb, mem_available_gb());
                std::fflush(stdout);
                continue;
              }
              const double load = load1();
              Measured m;
              if (world == 1 && !isolate) {
                at::set_num_threads(a.threads);
                m = measure(a, preset, dtype, gc, lora, nullptr);
              } else {
                m = run_ranks(a, std::filesystem::read_symlink("/proc/self/exe").string(), preset, dtype, gc, lora,
                              world);
              }
              // The peak again right after: the MFU is against the faster of the two measurements.
              peaks.erase({dtype, tpr});
              const double peak_after = world * peak_of(dtype, tpr);
              report(a, preset, dtype, world, gc, lora, m, std::max(peak, peak_after), tpr, std::max(load, load1()));
            }
  return 0;
}
