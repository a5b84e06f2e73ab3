// RL math on [B, S]: advantage estimators, the PPO policy loss forward+backward, and batch balancing.
// Prints JSON lines.   bench_rl [--threads 2] [--smoke]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "roll/rl/advantage.h"
#include "roll/rl/balance.h"
#include "roll/rl/policy_loss.h"

using namespace roll::rl;
using Clock = std::chrono::steady_clock;

template <typename F>
double best_ms(int n, F&& fn) {
  double best = 1e30;
  for (int i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return best;
}

int main(int argc, char** argv) {
  int threads = 2;
  bool smoke = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::stoi(argv[++i]);
    if (a == "--smoke") smoke = true;
  }
  at::set_num_threads(threads);
  const int64_t B = smoke ? 32 : 256, S = smoke ? 512 : 4096;
  const int reps = smoke ? 1 : 5;
  at::manual_seed(0);
  at::Tensor mask = (at::rand({B, S}) < 0.9).to(at::kFloat);
  at::Tensor rewards = at::zeros({B, S});
  rewards.select(1, S - 1).copy_(at::randn({B}));
  at::Tensor values = at::randn({B, S});
  for (auto [name, est] : {std::pair{"gae", AdvEstimator::gae}, {"reinforce", AdvEstimator::reinforce},
                           {"agentic_reinforce", AdvEstimator::agentic_reinforce}}) {
    AdvantageInputs in{rewards, mask, est == AdvEstimator::gae ? values : at::Tensor()};
    AdvantageParams p;
    p.estimator = est;
    p.lambd = 0.95;  // ROLL's
    p.whiten_advantages = true;
    p.advantage_clip = 2.0;
    double ms = best_ms(reps, [&] { compute_advantage(in, p); });
    std::printf("{\"bench\":\"compute_advantage\",\"estimator\":\"%s\",\"B\":%ld,\"S\":%ld,\"threads\":%d,\"ms\":%.2f}\n",
                name, B, S, threads, ms);
  }
  {
    at::Tensor logp = (at::randn({B, S}) * 0.1 - 1.0).requires_grad_(true);
    PolicyLossInputs in;
    in.log_probs = logp;
    in.old_log_probs = logp.detach() + at::randn({B, S}) * 0.05;
    in.ref_log_probs = logp.detach() + at::randn({B, S}) * 0.05;
    in.advantages = at::randn({B, S});
    in.response_mask = mask;
    PolicyLossParams p;
    p.pg_clip = 0.2;  // ROLL's
    p.use_kl_loss = true;
    p.kl_loss_coef = 0.01;
    p.dual_clip_loss = true;
    double ms = best_ms(reps, [&] {
      auto r = policy_loss(in, p);
      r.total_loss.backward();
      logp.mutable_grad().zero_();
    });
    std::printf("{\"bench\":\"policy_loss_fwd_bwd\",\"variant\":\"ppo+kl+dual_clip\",\"B\":%ld,\"S\":%ld,\"threads\":%d,"
                "\"ms\":%.2f}\n",
                B, S, threads, ms);
  }
  {
    std::vector<int64_t> lens;
    at::Tensor l = at::randint(16, S, {smoke ? 256 : 4096}, at::kLong);
    for (int64_t i = 0; i < l.numel(); ++i) lens.push_back(l[i].item<int64_t>());
    double ms = best_ms(reps, [&] { batch_balance(lens, 8, "global_seqlen/actor_train"); });
    std::printf("{\"bench\":\"batch_balance\",\"samples\":%zu,\"dp\":8,\"ms\":%.2f}\n", lens.size(), ms);
  }
  return 0;
}
