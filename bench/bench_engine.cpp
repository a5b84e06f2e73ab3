// Inference engine throughput, printed as JSON lines (docs/design.md section 7):
//   - memory bandwidth (memcpy, and a read-only pass) and the batch-1 decode bound the read rate
//     implies for each model (decode reads every weight once per step and writes little);
//   - decode tokens/s of the engine (paged KV cache) at 1, 8, 64 and 256 concurrent sequences,
//     beside a contiguous-cache baseline (one preallocated [B, Hkv, T, D] cache per layer,
//     attention by ATen matmuls, the conventional layout) at the same batch sizes, and a
//     recompute-without-cache baseline (every step runs the whole sequence) at batch 1 and 8;
//   - prefill tokens/s of one 512-token prompt;
//   - for each paged decode point, an "engine_step_profile" line: milliseconds per decode step by
//     phase (the forward's products, attention, norms, RoPE, SwiGLU, the sampler, scheduling).
// Baselines run the same ModelRunner (same matrix products), so they isolate the KV-cache design.
// Each point stops after --max-seconds (default 60) and says so ("capped": true).
//
//   bench_engine [--threads 2] [--presets small,qwen2.5-0.5b-shape] [--dtypes fp32,bf16]
//                [--batches 1,8,64,256] [--max-seconds 60] [--smoke]
//                [--bf16-products native|aten|split|widened]
// A "kernels" line says which matrix-product path the engine takes on this CPU; --bf16-products
// forces the large-M bf16 path (native: AMX tiles where the CPU has them, else the vdpbf16ps
// pair kernel; aten: ATen's bf16 product instead of either; native needs AVX512-BF16 or AMX,
// else it is a scalar loop).
#include <ATen/ATen.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "roll/core/cpu_block_cache.h"
#include "roll/core/cpu_features.h"
#include "roll/core/parallel_for.h"
#include "roll/engine/cpu_kernels.h"
#include "roll/engine/linear.h"
#include "roll/engine/engine_core.h"
#include "roll/engine/model_runner.h"
#include "roll/model/model_init.h"
#include "roll/model/transformer.h"

using namespace roll;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double load1() {
  std::ifstream f("/proc/loadavg");
  double l = -1;
  f >> l;
  return l;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

std::string fmt_ms(const char* name, double ms) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "\"%s\":%.3f", name, ms);
  return buf;
}

const char* dtype_name(at::ScalarType t) { return t == at::kBFloat16 ? "bf16" : "fp32"; }

struct Options {
  int threads = 2;
  std::vector<std::string> presets{"small", "qwen2.5-0.5b-shape"};
  std::vector<std::string> dtypes{"fp32", "bf16"};
  std::vector<int64_t> batches{1, 8, 64, 256};
  double max_seconds = 60;
  int64_t prompt = 32, new_tokens = 32, prefill = 512, recompute_new = 16;
  bool smoke = false;
};

// Seconds of the fastest of `repeats` calls of fn, after one untimed warm-up call.
template <typename F>
double best_seconds(int repeats, F&& fn) {
  fn();
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    auto t0 = Clock::now();
    fn();
    best = std::min(best, since(t0));
  }
  return best;
}

// Bytes copied per second by a large memcpy.
double memcpy_bandwidth(bool smoke) {
  at::Tensor src = at::randn({(smoke ? 16 : 128) << 20}), dst = at::empty_like(src);
  return static_cast<double>(src.nbytes()) / best_seconds(smoke ? 2 : 5, [&] { dst.copy_(src); });
}

// Bytes read per second by a vectorised max over a large buffer on all threads: what a decode
// step that streams its weights can reach at best (the figure the decode bound uses). memcpy
// also writes, and counts half of that.
double read_bandwidth(bool smoke) {
  at::Tensor src = at::randn({(smoke ? 16 : 256) << 20});
  const float* p = src.data_ptr<float>();
  const int64_t n = src.numel(), chunk = 1 << 20, chunks = (n + chunk - 1) / chunk;
  std::vector<float> sink(static_cast<size_t>(chunks));  // keeps the maxima from being optimised away
  const double s = best_seconds(smoke ? 2 : 5, [&] {
    at::parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) sink[c] = engine::kernels::max_of(p + c * chunk, std::min(chunk, n - c * chunk));
    });
  });
  return static_cast<double>(src.nbytes()) / s;
}

int64_t weight_bytes(const model::Transformer& m) {
  int64_t n = 0;
  for (const auto& [k, t] : m.named_parameters()) n += t.numel() * static_cast<int64_t>(t.element_size());
  return n;
}

std::vector<int32_t> random_prompt(int64_t n, int64_t vocab, uint64_t seed) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  at::Tensor t = at::randint(0, vocab, {n}, g, at::kLong);
  return std::vector<int32_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + n);
}

// B sequences of equal length in one contiguous cache per layer, [B, Hkv, Tmax, D]; a step
// feeds n tokens of every sequence (token b * n + i is token i of sequence b).
class ContiguousAttention : public model::AttentionBackend {
 public:
  ContiguousAttention(const model::ModelConfig& c, at::ScalarType dtype, int64_t B, int64_t max_len)
      : B_(B), Hq_(c.num_attention_heads), Hkv_(c.num_key_value_heads), D_(c.head_dim) {
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
      k_.push_back(at::empty({B, Hkv_, max_len, D_}, at::TensorOptions().dtype(dtype)));
      v_.push_back(at::empty({B, Hkv_, max_len, D_}, at::TensorOptions().dtype(dtype)));
    }
  }
  void begin(int64_t n) { n_ = n; }
  void end() { len_ += n_; }
  void reset() { len_ = 0; }

  at::Tensor attend(int64_t layer, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) override {
    const int64_t n = n_, T = len_ + n, g = Hq_ / Hkv_;
    auto heads_first = [&](const at::Tensor& x, int64_t h) { return x.view({B_, n, h, D_}).transpose(1, 2); };
    k_[layer].narrow(2, len_, n).copy_(heads_first(k, Hkv_));
    v_[layer].narrow(2, len_, n).copy_(heads_first(v, Hkv_));
    // Scores in fp32: ATen's bf16 matmul on CPUs without AVX-512 is a scalar loop.
    at::Tensor K = k_[layer].narrow(2, 0, T).to(at::kFloat).reshape({B_ * Hkv_, T, D_});
    at::Tensor V = v_[layer].narrow(2, 0, T).to(at::kFloat).reshape({B_ * Hkv_, T, D_});
    // Query heads grouped under their kv head: [B * Hkv, g * n, D].
    at::Tensor Q = q.to(at::kFloat).view({B_, n, Hkv_, g, D_}).permute({0, 2, 3, 1, 4}).reshape({B_ * Hkv_, g * n, D_});
    at::Tensor s = at::bmm(Q, K.transpose(1, 2)).mul_(1.0 / std::sqrt(static_cast<double>(D_)));
    at::Tensor qpos = (at::arange(n, at::kLong) + len_).repeat({g});  // row r is query r % n
    at::Tensor mask = at::arange(T, at::kLong).unsqueeze(0) > qpos.unsqueeze(1);
    s.masked_fill_(mask, -INFINITY);
    at::Tensor o = at::bmm(at::softmax(s, -1), V);  // [B * Hkv, g * n, D]
    return o.view({B_, Hkv_, g, n, D_}).permute({0, 3, 1, 2, 4}).reshape({B_ * n, Hq_ * D_});
  }

 private:
  int64_t B_, Hq_, Hkv_, D_, n_ = 0, len_ = 0;
  std::vector<at::Tensor> k_, v_;
};

void print_point(const char* bench, const std::string& preset, at::ScalarType dtype, int threads, const char* impl,
                 int64_t batch, int64_t prompt, int64_t tokens, double seconds, bool capped, const char* extra = "") {
  std::printf(
      "{\"bench\":\"%s\",\"preset\":\"%s\",\"dtype\":\"%s\",\"threads\":%d,\"impl\":\"%s\",\"batch\":%ld,"
      "\"prompt\":%ld,\"tokens\":%ld,\"seconds\":%.3f,\"tokens_per_s\":%.1f,\"capped\":%s,\"load1\":%.2f%s}\n",
      bench, preset.c_str(), dtype_name(dtype), threads, impl, batch, prompt, tokens, seconds,
      seconds > 0 ? tokens / seconds : 0.0, capped ? "true" : "false", load1(), extra);
  std::fflush(stdout);
}

// Where the timed decode steps of one point went, in milliseconds per step: the forward by phase,
// the sampler's passes, the rest of output processing and scheduling; `other` is the step time
// none of them covers (the loop around the steps).
void print_step_profile(const std::string& preset, at::ScalarType dtype, int threads, int64_t batch, int64_t steps,
                        double seconds, const engine::StepStats& sum) {
  if (steps == 0) return;
  const double per = 1e3 / static_cast<double>(steps);
  std::string phases;
  double forward_phases = 0;
  for (size_t i = 0; i < engine::kNumStepPhases; ++i) {
    const double s = sum.forward_phases.seconds[i];
    forward_phases += s;
    phases += fmt_ms(engine::step_phase_name(static_cast<engine::StepPhase>(i)), s * per) + ",";
  }
  phases += fmt_ms("forward_rest", (sum.forward_s - forward_phases) * per) + ",";
  phases += fmt_ms("sampler", sum.draw_s * per) + ",";
  phases += fmt_ms("output", (sum.sample_s - sum.draw_s) * per) + ",";
  phases += fmt_ms("schedule", sum.schedule_s * per) + ",";
  phases += fmt_ms("other", (seconds - sum.forward_s - sum.sample_s - sum.schedule_s) * per);
  std::printf("{\"bench\":\"engine_step_profile\",\"preset\":\"%s\",\"dtype\":\"%s\",\"threads\":%d,\"impl\":\"paged\","
              "\"batch\":%ld,\"steps\":%ld,\"step_ms\":%.3f,\"phases_ms\":{%s},\"load1\":%.2f}\n",
              preset.c_str(), dtype_name(dtype), threads, batch, steps, seconds * per, phases.c_str(), load1());
  std::fflush(stdout);
}

engine::EngineConfig engine_config(const Options& o, int64_t batch, int64_t max_len, bool prefix) {
  engine::EngineConfig c;
  c.block_size = 16;
  c.num_blocks = batch * ((max_len + 15) / 16 + 1);
  c.max_model_len = max_len;
  c.max_num_seqs = std::max<int64_t>(256, batch);
  c.max_num_batched_tokens = std::max<int64_t>(8192, batch * o.prompt);
  c.enable_prefix_caching = prefix;
  c.num_threads = o.threads;
  return c;
}

// Engine decode: prefill every prompt (not timed), then time the decode steps.
void bench_engine_decode(const Options& o, const std::string& preset, std::shared_ptr<model::Transformer> m,
                         int64_t B) {
  const auto& c = m->config();
  engine::EngineCore eng(m, engine_config(o, B, o.prompt + o.new_tokens + 1, true));
  for (int64_t b = 0; b < B; ++b) {
    GenerationRequest r;
    r.request_id = std::to_string(b);
    r.prompt_token_ids = random_prompt(o.prompt, c.vocab_size, 1000 + b);
    r.params.temperature = 0;
    r.params.max_new_tokens = o.new_tokens;
    eng.add_request(r);
  }
  int64_t first = 0;
  while (first < B) first += eng.step().num_sampled;
  int64_t tokens = 0, steps = 0;
  bool capped = false;
  engine::StepStats sum;
  auto t0 = Clock::now();
  while (eng.has_unfinished()) {
    const engine::StepStats st = eng.step();
    tokens += st.num_sampled;
    ++steps;
    sum.schedule_s += st.schedule_s, sum.forward_s += st.forward_s, sum.sample_s += st.sample_s;
    sum.draw_s += st.draw_s, sum.forward_phases += st.forward_phases;
    if (since(t0) > o.max_seconds) {
      capped = true;
      break;
    }
  }
  const double seconds = since(t0);
  print_point("engine_decode", preset, m->dtype(), o.threads, "paged", B, o.prompt, tokens, seconds, capped);
  print_step_profile(preset, m->dtype(), o.threads, B, steps, seconds, sum);
}

void bench_contiguous_decode(const Options& o, const std::string& preset, std::shared_ptr<model::Transformer> m,
                             int64_t B) {
  const auto& c = m->config();
  engine::ModelRunner runner(m);
  ContiguousAttention attn(c, m->dtype(), B, o.prompt + o.new_tokens);
  at::NoGradGuard ng;
  std::vector<int64_t> ids, pos, rows;
  for (int64_t b = 0; b < B; ++b) {
    auto p = random_prompt(o.prompt, c.vocab_size, 1000 + b);
    for (int64_t i = 0; i < o.prompt; ++i) ids.push_back(p[i]), pos.push_back(i);
    rows.push_back((b + 1) * o.prompt - 1);
  }
  attn.begin(o.prompt);
  at::Tensor logits = runner.forward(at::tensor(ids, at::kLong), at::tensor(pos, at::kLong), attn, at::tensor(rows, at::kLong));
  attn.end();
  at::Tensor next = logits.argmax(1);
  at::Tensor all_rows = at::arange(B, at::kLong);
  int64_t tokens = 0;
  bool capped = false;
  auto t0 = Clock::now();
  for (int64_t g = 1; g < o.new_tokens; ++g) {
    attn.begin(1);
    logits = runner.forward(next, at::full({B}, o.prompt + g - 1, at::kLong), attn, all_rows);
    attn.end();
    next = logits.argmax(1);
    tokens += B;
    if (since(t0) > o.max_seconds) {
      capped = true;
      break;
    }
  }
  print_point("engine_decode", preset, m->dtype(), o.threads, "contiguous", B, o.prompt, tokens, since(t0), capped);
}

// No cache: each new token runs prompt + generated tokens through the model again.
void bench_recompute_decode(const Options& o, const std::string& preset, std::shared_ptr<model::Transformer> m,
                            int64_t B) {
  const auto& c = m->config();
  engine::ModelRunner runner(m);
  const int64_t G = o.recompute_new;
  ContiguousAttention attn(c, m->dtype(), B, o.prompt + G);
  at::NoGradGuard ng;
  std::vector<std::vector<int64_t>> seqs;
  for (int64_t b = 0; b < B; ++b) {
    auto p = random_prompt(o.prompt, c.vocab_size, 1000 + b);
    seqs.emplace_back(p.begin(), p.end());
  }
  int64_t tokens = 0;
  bool capped = false;
  auto t0 = Clock::now();
  for (int64_t g = 0; g < G; ++g) {
    const int64_t T = static_cast<int64_t>(seqs[0].size());
    std::vector<int64_t> ids, pos, rows;
    for (int64_t b = 0; b < B; ++b) {
      ids.insert(ids.end(), seqs[b].begin(), seqs[b].end());
      for (int64_t i = 0; i < T; ++i) pos.push_back(i);
      rows.push_back((b + 1) * T - 1);
    }
    attn.reset();
    attn.begin(T);
    at::Tensor next = runner.forward(at::tensor(ids, at::kLong), at::tensor(pos, at::kLong), attn,
                                     at::tensor(rows, at::kLong)).argmax(1);
    for (int64_t b = 0; b < B; ++b) seqs[b].push_back(next[b].item<int64_t>());
    tokens += B;
    if (since(t0) > o.max_seconds) {
      capped = true;
      break;
    }
  }
  print_point("engine_decode", preset, m->dtype(), o.threads, "recompute", B, o.prompt, tokens, since(t0), capped);
}

// One long prompt through the engine (prefix caching off so repeats recompute); best of 2.
void bench_prefill(const Options& o, const std::string& preset, std::shared_ptr<model::Transformer> m) {
  engine::EngineConfig cfg = engine_config(o, 1, o.prefill + 2, false);
  cfg.max_num_batched_tokens = std::max<int64_t>(cfg.max_num_batched_tokens, o.prefill);
  engine::EngineCore eng(m, cfg);
  double best = 1e30;
  bool capped = false;
  auto start = Clock::now();
  for (int rep = 0; rep < 2 && !capped; ++rep) {
    GenerationRequest r;
    r.request_id = "p" + std::to_string(rep);
    r.prompt_token_ids = random_prompt(o.prefill, m->config().vocab_size, 7 + rep);
    r.params.temperature = 0;
    r.params.max_new_tokens = 1;
    eng.add_request(r);
    auto t0 = Clock::now();
    while (eng.has_unfinished()) eng.step();
    best = std::min(best, since(t0));
    eng.outputs();
    capped = since(start) > o.max_seconds;
  }
  print_point("engine_prefill", preset, m->dtype(), o.threads, "paged", 1, o.prefill, o.prefill, best, capped);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  // As every roll process does (ROLL_CPU_BLOCK_CACHE_MB=0 measures without it).
  roll::core::install_cpu_block_cache(roll::core::cpu_block_cache_limit_from_env());
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--threads") o.threads = std::stoi(next());
    else if (a == "--presets") o.presets = split(next());
    else if (a == "--dtypes") o.dtypes = split(next());
    else if (a == "--batches") {
      o.batches.clear();
      for (const auto& b : split(next())) o.batches.push_back(std::stoll(b));
    } else if (a == "--max-seconds") o.max_seconds = std::stod(next());
    else if (a == "--smoke") o.smoke = true;
    else if (a == "--bf16-products") {
      const std::string v = next();
      if (!engine::select_bf16_products(v)) {
        std::fprintf(stderr, "--bf16-products is native, aten, split or widened, not '%s'\n", v.c_str());
        return 2;
      }
    }
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (o.smoke) {
    o.presets = {"tiny"};
    o.batches = {1, 8};
    o.prompt = 8, o.new_tokens = 4, o.prefill = 32, o.recompute_new = 4;
    o.max_seconds = std::min(o.max_seconds, 5.0);
  }
  at::set_num_threads(o.threads);
  const double bw = memcpy_bandwidth(o.smoke), read_bw = read_bandwidth(o.smoke);
  std::printf("{\"bench\":\"memcpy_bandwidth\",\"threads\":%d,\"gb_s\":%.2f,\"read_plus_write_gb_s\":%.2f,\"load1\":%.2f}\n",
              o.threads, bw / 1e9, 2 * bw / 1e9, load1());
  std::printf("{\"bench\":\"read_bandwidth\",\"threads\":%d,\"gb_s\":%.2f,\"load1\":%.2f}\n", o.threads,
              read_bw / 1e9, load1());
  const core::CpuFeatures& cpu = core::cpu_features();
  std::printf("{\"bench\":\"kernels\",\"cpu\":\"%s\",\"avx2\":%s,\"avx512f\":%s,\"avx512_bf16\":%s,"
              "\"fp32_path\":\"%s\",\"bf16_path\":\"%s\"}\n",
              cpu.model.c_str(), cpu.avx2 ? "true" : "false", cpu.avx512f ? "true" : "false",
              cpu.avx512_bf16 ? "true" : "false", engine::linear_path(at::kFloat), engine::linear_path(at::kBFloat16));
  for (const auto& preset : o.presets)
    for (const auto& dt : o.dtypes) {
      const at::ScalarType dtype = dt == "bf16" ? at::kBFloat16 : at::kFloat;
      auto m = model::Transformer::random(model::preset_config(preset, "qwen2"), dtype, 0, 0.02);
      const int64_t wb = weight_bytes(*m);
      std::printf("{\"bench\":\"decode_bandwidth_bound\",\"preset\":\"%s\",\"dtype\":\"%s\",\"weight_bytes\":%ld,"
                  "\"memcpy_gb_s\":%.2f,\"read_gb_s\":%.2f,\"batch1_tokens_per_s_bound\":%.1f}\n",
                  preset.c_str(), dt.c_str(), wb, bw / 1e9, read_bw / 1e9, read_bw / wb);
      std::fflush(stdout);
      bench_prefill(o, preset, m);
      for (int64_t B : o.batches) {
        bench_engine_decode(o, preset, m, B);
        bench_contiguous_decode(o, preset, m, B);
        if (B <= 8) bench_recompute_decode(o, preset, m, B);
      }
    }
  return 0;
}
