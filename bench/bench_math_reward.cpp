// math_rule reward throughput: samples/s through MathRuleReward (extraction in this process,
// parsing and equivalence in one roll-math-verifier helper over a socket pair), per workload, and
// the cost of a timeout kill + helper restart. Prints JSON lines.
//   bench_math_reward [--samples N] [--smoke]
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "roll/reward/math/math_rule_reward.h"

using namespace roll::reward;
using Clock = std::chrono::steady_clock;

namespace {

struct Sample {
  std::string response, prompt, gold;
};

const char* kPrompt = "<|im_start|>user\nSolve the problem.<|im_end|>\n<|im_start|>assistant\n<think>\n";

// Arithmetic with \boxed{} answers, as `roll data arithmetic` produces; a third are wrong.
std::vector<Sample> boxed_arithmetic(int n, std::mt19937& rng) {
  std::uniform_int_distribution<long> d(10, 99999);
  std::vector<Sample> out;
  for (int i = 0; i < n; ++i) {
    long a = d(rng), b = d(rng);
    long ans = i % 3 == 0 ? a * b + 1 : a * b;
    Sample s;
    s.prompt = kPrompt;
    s.gold = std::to_string(a * b);
    s.response = "First multiply " + std::to_string(a) + " by " + std::to_string(b) +
                 " digit by digit and add the partial products.\n</think>\n\nThe product is $\\boxed{" +
                 std::to_string(ans) + "}$.<|im_end|>";
    out.push_back(std::move(s));
  }
  return out;
}

// Answers that need GiNaC: radicals, trig identities, fractions in other forms.
std::vector<Sample> symbolic(int n) {
  const std::pair<const char*, const char*> pairs[] = {
      {"2\\sqrt{2}", "\\sqrt{8}"},        {"\\frac{\\sqrt{3}}{2}", "\\sin\\frac{\\pi}{3}"},
      {"1", "\\sin^2 x + \\cos^2 x"},     {"x+1", "\\frac{x^2-1}{x-1}"},
      {"\\pi", "3.14"},                   {"(-\\infty, 2] \\cup (3, \\infty)", "(3,\\infty)\\cup(-\\infty,2]"},
      {"\\frac{1}{2}", "0.5"},            {"3+4i", "(2+i)^2"},
  };
  std::vector<Sample> out;
  for (int i = 0; i < n; ++i) {
    const auto& [gold, ans] = pairs[i % 8];
    out.push_back({std::string("reasoning\n</think>\n\nSo the answer is \\boxed{") + ans + "}", kPrompt, gold});
  }
  return out;
}

// No \boxed: the answer region is searched for formulas (long responses).
std::vector<Sample> free_text(int n) {
  std::vector<Sample> out;
  std::string filler;
  for (int i = 0; i < 200; ++i) filler += "we consider case " + std::to_string(i) + " and it gives nothing new. ";
  for (int i = 0; i < n; ++i)
    out.push_back({"thinking\n</think>\n\n" + filler + "Therefore the final answer is $" + std::to_string(i) + "$.",
                   kPrompt, std::to_string(i)});
  return out;
}

void run(const char* name, const std::vector<Sample>& samples) {
  MathRuleReward reward;
  reward.score("warm up\n\n\\boxed{1}", "Q", "1");  // start the helper outside the timing
  double correct = 0;
  const auto t0 = Clock::now();
  for (const Sample& s : samples) correct += reward.score(s.response, s.prompt, s.gold).score;
  const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
  const auto m = reward.metrics();
  std::printf(
      "{\"bench\":\"math_reward\",\"workload\":\"%s\",\"samples\":%zu,\"seconds\":%.4f,\"samples_per_s\":%.1f,"
      "\"us_per_sample\":%.1f,\"correct_frac\":%.3f,\"timeouts\":%.0f,\"refused\":%.0f}\n",
      name, samples.size(), sec, samples.size() / sec, 1e6 * sec / samples.size(), correct / samples.size(),
      m.at("math_verify/timeouts"), m.at("math_verify/refused"));
}

}  // namespace

int main(int argc, char** argv) {
  int n = 2000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--smoke") n = 50;
    if (a == "--samples" && i + 1 < argc) n = std::stoi(argv[++i]);
  }
  std::mt19937 rng(0);
  run("boxed_arithmetic", boxed_arithmetic(n, rng));
  run("symbolic", symbolic(n));
  run("free_text_region", free_text(n / 4 + 1));

  // Timeout path: a hung helper is killed at the limit and the next sample starts a fresh one.
  MathVerifierOptions opt;
  opt.time_limit = std::chrono::milliseconds(100);
  MathVerifier v(opt);
  v.verify("1", "1", AnswerForm::kLatex);
  const int restarts = n >= 2000 ? 20 : 3;
  double restart_ms = 0;
  for (int i = 0; i < restarts; ++i) {
    v.debug_request('H');
    const auto t0 = Clock::now();
    v.verify("1", "1", AnswerForm::kLatex);
    restart_ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }
  std::printf("{\"bench\":\"math_reward_restart\",\"restarts\":%d,\"ms_per_restart_and_sample\":%.2f}\n", restarts,
              restart_ms / restarts);
  return 0;
}
