// The LoRA merge of a weight sync (model/lora_merge_kernel.h): out = W + (alpha / r) B A for
// every adapted module of a model shape, beside two figures measured in the same rounds:
//   copy   out.copy_(W) for every module: the memory floor (W read once, out written once);
//   aten   what a plain implementation does: at::addmm in fp32, copied into out (for fp32
//          weights straight into out with addmm_out);
//   gemm   an fp32 at::mm of 1024^3 (BLAS near its peak): the compute bound, as GFLOP/s.
// At rank 16 the merge does 32 flops per element of W, so on 2 cores it is bound by the FMA
// units, not by memory. Rounds interleave kernel, copy, aten and gemm; each line gives the
// median of --repeats, and the summary the kernel's ratios, min and max over the rounds.
//
//   bench_lora_merge [--preset qwen2.5-0.5b-shape] [--dtypes bf16,fp32] [--rank 16]
//                    [--target q_proj,k_proj,v_proj,o_proj] [--rounds 3] [--repeats 5] [--threads 2]
//                    [--kernel best|portable] [--smoke]
// After the rounds the kernel's output is checked against ATen's fp32 addmm (one rounding to the
// weights' dtype apart at most); a larger difference fails the bench. --smoke: the small preset,
// one round of one repeat, every kernel this CPU has.
#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "roll/core/cpu_block_cache.h"
#include "roll/core/cpu_features.h"
#include "roll/core/parallel_for.h"
#include "roll/model/lora.h"
#include "roll/model/lora_merge_kernel.h"
#include "roll/model/model_init.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string preset = "qwen2.5-0.5b-shape";
  std::vector<std::string> dtypes{"bf16", "fp32"};
  int64_t rank = 16;
  std::string target = "q_proj,k_proj,v_proj,o_proj";
  int rounds = 3;
  int repeats = 5;
  int threads = 2;
  std::string kernel = "best";
  bool smoke = false;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = s.find(',', start);
    const std::string part = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!part.empty()) out.push_back(part);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// [out, in] of a decoder module, from its name's last part.
std::pair<int64_t, int64_t> shape_of(const roll::model::ModelConfig& c, const std::string& module) {
  const std::string leaf = module.substr(module.rfind('.') + 1);
  const int64_t h = c.hidden_size, q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
  if (leaf == "q_proj") return {q, h};
  if (leaf == "k_proj" || leaf == "v_proj") return {kv, h};
  if (leaf == "o_proj") return {h, q};
  if (leaf == "gate_proj" || leaf == "up_proj") return {c.intermediate_size, h};
  if (leaf == "down_proj") return {h, c.intermediate_size};
  throw std::runtime_error("bench_lora_merge: no shape for module " + module);
}

double median_seconds(const std::function<void()>& f, int repeats) {
  f();  // untimed: pages of out exist, caches warm as in a sync after the first
  std::vector<double> s;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    f();
    s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

// Largest |out - ref| / (|ref| + 1e-3) over all modules, ref = ATen's fp32 addmm.
double worst_relative_difference(const std::vector<roll::model::LoraMergeJob>& jobs) {
  at::NoGradGuard g;
  double worst = 0;
  for (const auto& j : jobs) {
    const at::Tensor ref = at::addmm(j.w.to(at::kFloat), j.b, j.a, 1.0, j.scale);
    const at::Tensor diff = (j.out.to(at::kFloat) - ref).abs() / (ref.abs() + 1e-3);
    worst = std::max(worst, diff.max().item<double>());
  }
  return worst;
}

int run(const Options& o) {
  at::set_num_threads(o.threads);
  const auto& cpu = roll::core::cpu_features();
  const roll::model::ModelConfig mc = roll::model::preset_config(o.preset, "qwen2");
  const roll::model::LoraConfig lora =
      roll::model::lora_config_from_args(o.target, o.rank, std::nullopt, 0, "--target");
  const auto modules = roll::model::lora_modules(lora, mc.num_hidden_layers);
  std::vector<roll::model::LoraMergeKernel> kernels{
      o.kernel == "portable" ? roll::model::LoraMergeKernel::kPortable : roll::model::best_lora_merge_kernel()};
  if (o.smoke && kernels[0] != roll::model::LoraMergeKernel::kPortable)
    kernels.push_back(roll::model::LoraMergeKernel::kPortable);
  int failures = 0;
  for (const roll::model::LoraMergeKernel kernel : kernels)
  for (const std::string& dt : o.dtypes) {
    const at::ScalarType dtype = dt == "bf16" ? at::kBFloat16 : at::kFloat;
    at::manual_seed(1);
    std::vector<roll::model::LoraMergeJob> jobs;
    int64_t elements = 0;
    for (const std::string& m : modules) {
      const auto [rows, cols] = shape_of(mc, m);
      at::Tensor w = at::randn({rows, cols}).to(dtype);
      jobs.push_back({at::empty_like(w), w, at::randn({o.rank, cols}) * 0.02, at::randn({rows, o.rank}) * 0.02,
                      lora.scale()});
      elements += rows * cols;
    }
    const double bytes = 2.0 * static_cast<double>(elements) * static_cast<double>(c10::elementSize(dtype));
    const double flops = 2.0 * static_cast<double>(o.rank) * static_cast<double>(elements);
    auto merge = [&] { roll::model::lora_merge_cpu(jobs, kernel); };
    auto copy = [&] {
      for (auto& j : jobs) j.out.copy_(j.w);
    };
    auto aten = [&] {
      at::NoGradGuard g;
      for (auto& j : jobs) {
        if (dtype == at::kFloat)
          at::addmm_out(j.out, j.w, j.b, j.a, 1.0, j.scale);
        else
          j.out.copy_(at::addmm(j.w.to(at::kFloat), j.b, j.a, 1.0, j.scale));
      }
    };
    const at::Tensor ga = at::randn({1024, 1024}), gb = at::randn({1024, 1024});
    at::Tensor gc = at::empty({1024, 1024});
    auto gemm = [&] { at::mm_out(gc, ga, gb); };
    const double gemm_flops = 2.0 * 1024 * 1024 * 1024;
    double of_copy_min = 1e9, of_copy_max = 0, vs_aten_min = 1e9, vs_aten_max = 0, of_peak_min = 1e9, of_peak_max = 0;
    for (int round = 0; round < o.rounds; ++round) {
      const double k = median_seconds(merge, o.repeats);
      const double c = median_seconds(copy, o.repeats);
      const double a = median_seconds(aten, o.repeats);
      const double peak = gemm_flops / median_seconds(gemm, o.repeats);
      of_peak_min = std::min(of_peak_min, flops / k / peak);
      of_peak_max = std::max(of_peak_max, flops / k / peak);
      of_copy_min = std::min(of_copy_min, c / k);
      of_copy_max = std::max(of_copy_max, c / k);
      vs_aten_min = std::min(vs_aten_min, a / k);
      vs_aten_max = std::max(vs_aten_max, a / k);
      std::cout << fmt::format(
          R"({{"bench":"lora_merge","round":{},"preset":"{}","dtype":"{}","rank":{},"target":"{}","modules":{},"kernel":"{}","threads":{},"seconds":{:.4f},"copy_seconds":{:.4f},"aten_seconds":{:.4f},"gb_per_s":{:.2f},"gflop_per_s":{:.1f},"gemm_gflop_per_s":{:.1f},"cpu":"{}","flags":"{}"}})",
          round, o.preset, dt, o.rank, o.target, modules.size(),
          kernel == roll::model::LoraMergeKernel::kAvx2 ? "avx2" : "portable", o.threads, k, c, a, bytes / k / 1e9,
          flops / k / 1e9, peak / 1e9, cpu.model, cpu.flags())
                << std::endl;
    }
    std::cout << fmt::format(
        R"({{"bench":"lora_merge","summary":true,"preset":"{}","dtype":"{}","kernel":"{}","rank":{},"rounds":{},"copy_over_kernel_min":{:.2f},"copy_over_kernel_max":{:.2f},"aten_over_kernel_min":{:.2f},"aten_over_kernel_max":{:.2f},"of_gemm_peak_min":{:.2f},"of_gemm_peak_max":{:.2f}}})",
        o.preset, dt, kernel == roll::model::LoraMergeKernel::kAvx2 ? "avx2" : "portable", o.rank, o.rounds, of_copy_min, of_copy_max, vs_aten_min, vs_aten_max, of_peak_min, of_peak_max)
              << std::endl;
    // One rounding of the sum to bf16 is 2^-8 of the value; both sides round once (bf16), and
    // their fp32 sums of 17 terms differ by far less than that.
    merge();  // the aten rounds wrote into out
    const double worst = worst_relative_difference(jobs), allowed = dtype == at::kBFloat16 ? 1.0 / 128 : 1e-4;
    if (worst > allowed) {
      std::cerr << fmt::format("bench_lora_merge: {} {}: the kernel differs from ATen's fp32 addmm by {:.3g} (allowed {:.3g})\n",
                               dt, kernel == roll::model::LoraMergeKernel::kAvx2 ? "avx2" : "portable", worst, allowed);
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error("bench_lora_merge: " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--preset") o.preset = next();
    else if (a == "--dtypes") o.dtypes = split(next());
    else if (a == "--rank") o.rank = std::stoll(next());
    else if (a == "--target") o.target = next();
    else if (a == "--rounds") o.rounds = std::stoi(next());
    else if (a == "--repeats") o.repeats = std::stoi(next());
    else if (a == "--threads") o.threads = std::stoi(next());
    else if (a == "--kernel") o.kernel = next();
    else if (a == "--smoke") {
      o.smoke = true;
      o.preset = "small";
      o.rounds = 1;
      o.repeats = 1;
    }
    else {
      std::cerr << "bench_lora_merge: unknown argument " << a << "\n";
      return 2;
    }
  }
  try {
    // As in every roll process: aten's fresh fp32 temporaries reuse freed blocks.
    roll::core::install_cpu_block_cache(roll::core::cpu_block_cache_limit_from_env());
    return run(o);
  } catch (const std::exception& e) {
    std::cerr << "bench_lora_merge: " << e.what() << "\n";
    return 1;
  }
}
