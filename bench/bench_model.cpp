// Model throughput: GEMM peak, prefill and forward+backward tokens/s with achieved GFLOP/s and
// MFU against the measured GEMM peak of the same dtype. Prints JSON lines.
//   bench_model [--preset qwen2.5-0.5b-shape] [--threads 2] [--dtypes fp32,bf16] [--prefill-seq 512]
//               [--train-batch 2] [--train-seq 256] [--repeats 2] [--smoke]
// --repeats 1 times a single cold call (no warm-up call): for bf16 on a CPU without native bf16
// GEMMs, where one 0.5B forward + backward takes minutes (docs/benchmarks.md).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "roll/core/cpu_block_cache.h"
#include "roll/model/model_init.h"
#include "roll/model/transformer.h"

using namespace roll::model;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Best-of-n wall time of fn().
template <typename F>
double time_best(int n, F&& fn) {
  double best = 1e30;
  for (int i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    fn();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

const char* dtype_name(at::ScalarType t) { return t == at::kBFloat16 ? "bf16" : "fp32"; }

double gemm_peak(at::ScalarType dtype, bool smoke) {
  const int64_t m = smoke ? 256 : 1024, k = smoke ? 256 : 896, n = smoke ? 256 : 4864;
  at::Tensor a = at::randn({m, k}).to(dtype), b = at::randn({k, n}).to(dtype);
  at::mm(a, b);
  double s = time_best(smoke ? 2 : 5, [&] { at::mm(a, b); });
  return 2.0 * m * k * n / s / 1e9;
}

// Matmul FLOPs of one forward token-batch: linear layers + attention scores/values + LM head.
double forward_flops(const ModelConfig& c, int64_t batch, int64_t T, bool full_lm_head) {
  const double H = c.hidden_size, D = c.head_dim, L = c.num_hidden_layers;
  const double q = c.num_attention_heads * D, kv = c.num_key_value_heads * D, F = c.intermediate_size;
  const double per_token_linear = 2.0 * L * (H * q + 2 * H * kv + q * H + 3 * H * F);
  const double attn = 2.0 * L * batch * (2.0 * T * T * q);  // QK^T and PV (full square, as computed)
  const double head_tokens = full_lm_head ? batch * T : batch;
  return per_token_linear * batch * T + attn + 2.0 * H * c.vocab_size * head_tokens;
}

}  // namespace

int main(int argc, char** argv) {
  // As every roll process does (ROLL_CPU_BLOCK_CACHE_MB=0 measures without it).
  roll::core::install_cpu_block_cache(roll::core::cpu_block_cache_limit_from_env());
  std::string preset = "qwen2.5-0.5b-shape";
  int threads = 2;
  std::string dtypes = "fp32,bf16";
  int64_t prefill_seq = 512, train_batch = 2, train_seq = 256;
  int repeats = 2;
  bool smoke = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--preset" && i + 1 < argc) preset = argv[++i];
    else if (a == "--threads" && i + 1 < argc) threads = std::stoi(argv[++i]);
    else if (a == "--dtypes" && i + 1 < argc) dtypes = argv[++i];
    else if (a == "--prefill-seq" && i + 1 < argc) prefill_seq = std::stol(argv[++i]);
    else if (a == "--train-batch" && i + 1 < argc) train_batch = std::stol(argv[++i]);
    else if (a == "--train-seq" && i + 1 < argc) train_seq = std::stol(argv[++i]);
    else if (a == "--repeats" && i + 1 < argc) repeats = std::max(1, std::stoi(argv[++i]));
    else if (a == "--smoke") smoke = true;
    else {
      std::fprintf(stderr, "bench_model: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  at::set_num_threads(threads);
  if (smoke) preset = "tiny", prefill_seq = 64, train_seq = 32, repeats = 1;
  const ModelConfig cfg = preset_config(preset, "qwen2");
  std::vector<at::ScalarType> dtype_list;
  for (size_t begin = 0; begin <= dtypes.size();) {
    const size_t comma = std::min(dtypes.find(',', begin), dtypes.size());
    const std::string name = dtypes.substr(begin, comma - begin);
    if (name != "fp32" && name != "bf16") {
      std::fprintf(stderr, "bench_model: --dtypes '%s': '%s' is not fp32 or bf16\n", dtypes.c_str(), name.c_str());
      return 2;
    }
    dtype_list.push_back(name == "bf16" ? at::kBFloat16 : at::kFloat);
    begin = comma + 1;
  }
  // One warm-up call, then the best of `repeats`; a single repeat is one cold call.
  auto timed = [&](auto&& fn) {
    if (repeats > 1) fn();
    return time_best(repeats, fn);
  };
  for (at::ScalarType dtype : dtype_list) {
    const double peak = gemm_peak(dtype, smoke);
    std::printf("{\"bench\":\"gemm_peak\",\"dtype\":\"%s\",\"threads\":%d,\"gflops\":%.1f}\n", dtype_name(dtype),
                threads, peak);
    auto model = Transformer::random(cfg, dtype, 0, 0.02);
    const int64_t B = 1, T = prefill_seq;
    at::Tensor ids = at::randint(0, cfg.vocab_size, {B, T}, at::kLong);
    at::Tensor mask = at::ones({B, T}, at::kLong);
    at::Tensor pos = at::arange(T, at::kLong).unsqueeze(0).expand({B, T}).contiguous();
    {
      at::NoGradGuard g;
      auto run = [&] {
        at::Tensor h = model->hidden_states(ids, mask, pos);
        model->lm_head(h.select(1, T - 1));
      };
      double s = timed(run);
      double gf = forward_flops(cfg, B, T, false) / s / 1e9;
      std::printf("{\"bench\":\"prefill\",\"preset\":\"%s\",\"dtype\":\"%s\",\"threads\":%d,\"batch\":%ld,\"seq\":%ld,"
                  "\"repeats\":%d,\"tokens_per_s\":%.1f,\"gflops\":%.1f,\"gemm_peak_gflops\":%.1f,\"mfu\":%.3f}\n",
                  preset.c_str(), dtype_name(dtype), threads, B, T, repeats, B * T / s, gf, peak, gf / peak);
    }
    model->set_requires_grad(true);
    const int64_t TB = train_batch, TT = train_seq;
    at::Tensor tids = at::randint(0, cfg.vocab_size, {TB, TT}, at::kLong);
    at::Tensor tmask = at::ones({TB, TT}, at::kLong);
    at::Tensor tpos = at::arange(TT, at::kLong).unsqueeze(0).expand({TB, TT}).contiguous();
    for (bool ckpt : {false, true}) {
      auto step = [&] {
        auto lp = model->token_log_probs(tids, tmask, tpos, false, ckpt, 256);
        lp.log_probs.mean().backward();
        for (auto& [n, t] : model->named_parameters())
          if (t.grad().defined()) t.mutable_grad().zero_();
      };
      double s = timed(step);
      // backward ~ 2x forward; checkpointing recomputes the forward once more.
      double flops = forward_flops(cfg, TB, TT, true) * (ckpt ? 4.0 : 3.0);
      double useful = forward_flops(cfg, TB, TT, true) * 3.0;
      std::printf("{\"bench\":\"train_fwd_bwd\",\"preset\":\"%s\",\"dtype\":\"%s\",\"threads\":%d,\"batch\":%ld,"
                  "\"seq\":%ld,\"grad_ckpt\":%s,\"repeats\":%d,\"tokens_per_s\":%.1f,\"gflops\":%.1f,\"gemm_peak_gflops\":%.1f,"
                  "\"mfu\":%.3f}\n",
                  preset.c_str(), dtype_name(dtype), threads, TB, TT, ckpt ? "true" : "false", repeats, TB * TT / s,
                  flops / s / 1e9, peak, useful / s / 1e9 / peak);
    }
    std::fflush(stdout);
  }
  return 0;
}
