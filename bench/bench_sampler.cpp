// The sampler over a decode step's logits ([rows, 151936] fp32, Qwen2.5's vocabulary), printed as
// JSON lines: microseconds per step for greedy, temperature 1 over the whole vocabulary, top-k 50
// and top-p 0.9, beside two references measured in the same run on the same buffer:
//   - `read_pass_us`: one vectorised read of the logits on all threads (a max per row), the least
//     a sampler that reads each row once can take;
//   - `aten_us`: ATen doing the same job (log_softmax for the raw log-prob; argmax, or softmax of
//     the tempered logits and multinomial; topk for top-k).
// Rounds alternate the sampler and the references (A B A B); min and max over the rounds.
//
//   bench_sampler [--threads 2] [--rows 1,8,64] [--rounds 5] [--vocab 151936]
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "roll/core/cpu_features.h"
#include "roll/core/parallel_for.h"
#include "roll/engine/cpu_kernels.h"
#include "roll/engine/sampler.h"

using namespace roll;
using Clock = std::chrono::steady_clock;

namespace {

double since_us(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

std::vector<int64_t> split_ints(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(std::stoll(item));
  return out;
}

// Microseconds of the fastest of `repeats` calls after one warm-up call.
template <typename F>
double best_us(int repeats, F&& fn) {
  fn();
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    auto t0 = Clock::now();
    fn();
    best = std::min(best, since_us(t0));
  }
  return best;
}

struct Mode {
  const char* name;
  SamplingParams params;
};

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, rounds = 5;
  int64_t vocab = 151936;
  std::vector<int64_t> rows{1, 8, 64};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--threads") threads = std::stoi(next());
    else if (a == "--rows") rows = split_ints(next());
    else if (a == "--rounds") rounds = std::stoi(next());
    else if (a == "--vocab") vocab = std::stoll(next());
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  at::set_num_threads(threads);
  std::vector<Mode> modes(4);
  modes[0].name = "greedy", modes[0].params.temperature = 0;
  modes[1].name = "temperature_1", modes[1].params.temperature = 1.0;
  modes[2].name = "top_k_50", modes[2].params.temperature = 1.0, modes[2].params.top_k = 50;
  modes[3].name = "top_p_0.9", modes[3].params.temperature = 1.0, modes[3].params.top_p = 0.9;
  const core::CpuFeatures& cpu = core::cpu_features();
  for (const int64_t R : rows) {
    // Logits shaped like a model's: a spread of a few units and 20 tokens a row well above the
    // rest (they hold ~95% of the mass, so top-p 0.9 stops among them).
    at::Generator g = at::detail::createCPUGenerator(17);
    at::Tensor logits = at::randn({R, vocab}, g) * 2.0;
    logits.scatter_add_(1, at::randint(0, vocab, {R, 20}, g, at::kLong), at::full({R, 20}, 14.0f));
    const float* base = logits.data_ptr<float>();
    std::vector<float> sink(static_cast<size_t>(R));
    for (const Mode& mode : modes) {
      std::vector<engine::SampleSpec> specs;
      for (int64_t r = 0; r < R; ++r) specs.push_back({r, &mode.params, {}, 3, 0, r});
      std::vector<double> ours, pass, aten;
      int64_t position = 0;
      for (int round = 0; round < rounds; ++round) {
        ours.push_back(best_us(3, [&] {
          for (auto& s : specs) s.position = position++;  // a fresh draw every call
          engine::sample_tokens(logits, specs);
        }));
        pass.push_back(best_us(3, [&] {
          at::parallel_for(0, R, 1, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r) sink[r] = engine::kernels::max_of(base + r * vocab, vocab);
          });
        }));
        aten.push_back(best_us(3, [&] {
          at::Tensor lp = at::log_softmax(logits, 1);
          at::Tensor tok;
          if (mode.params.temperature == 0) tok = logits.argmax(1, true);
          else if (mode.params.top_k > 0) {
            auto [v, idx] = at::topk(logits, mode.params.top_k, 1);
            tok = idx.gather(1, at::multinomial(at::softmax(v, 1), 1));
          } else if (mode.params.top_p < 1.0) {
            auto [v, idx] = at::sort(logits, 1, /*descending=*/true);
            at::Tensor p = at::softmax(v, 1), before = p.cumsum(1) - p;
            p.masked_fill_(before >= mode.params.top_p, 0);
            tok = idx.gather(1, at::multinomial(p, 1));
          } else tok = at::multinomial(at::softmax(logits, 1), 1);
          sink[0] = lp.gather(1, tok).sum().item<float>();
        }));
      }
      auto lo = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
      auto hi = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
      std::vector<double> vs_pass, vs_aten;
      for (int i = 0; i < rounds; ++i) vs_pass.push_back(ours[i] / pass[i]), vs_aten.push_back(aten[i] / ours[i]);
      std::printf(
          "{\"bench\":\"sampler\",\"cpu\":\"%s\",\"threads\":%d,\"mode\":\"%s\",\"rows\":%ld,\"vocab\":%ld,"
          "\"us_min\":%.1f,\"us_max\":%.1f,\"read_pass_us_min\":%.1f,\"aten_us_min\":%.1f,"
          "\"over_read_pass_min\":%.2f,\"over_read_pass_max\":%.2f,\"aten_over_ours_min\":%.2f,"
          "\"aten_over_ours_max\":%.2f,\"rounds\":%d}\n",
          cpu.model.c_str(), threads, mode.name, R, vocab, lo(ours), hi(ours), lo(pass), lo(aten), lo(vs_pass),
          hi(vs_pass), lo(vs_aten), hi(vs_aten), rounds);
      std::fflush(stdout);
    }
  }
  return 0;
}
