// Peak memory of ZeRO-3 on two ranks against plain data parallel (resident set high-water mark).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <malloc.h>

#include <fstream>

#include "multiprocess.h"
#include "roll/train/strategy.h"
#include "train_test_util.h"

using namespace roll;
using namespace roll::test;

namespace {

// kB from /proc/self/status ("VmHWM:", "VmRSS:").
int64_t status_kb(const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) return std::stoll(line.substr(key.size()));
  return -1;
}

int64_t read_number(const std::string& path) {
  std::ifstream in(path);
  int64_t v = -1;
  in >> v;
  return v;
}

}  // namespace

TEST(TrainMemory, ZeroThreePeakBelowPlainDataParallel) {
  if (auto ctx = child_context()) {
    at::set_num_threads(ctx->threads);
    // Resident memory should follow live tensor bytes. By default glibc raises its mmap threshold
    // each time a large block is freed and then serves (and keeps) such blocks from the heap, so
    // the high-water mark also counts memory that was freed and not yet reused. A fixed threshold
    // returns every large block to the system when it is freed.
    mallopt(M_MMAP_THRESHOLD, 64 * 1024);
    const int stage = std::stoi(ctx->env.at("ROLL_TEST_STAGE"));
    auto pg = child_group(*ctx);
    const int64_t base = status_kb("VmRSS:");
    model::ModelConfig c = tiny_config(12, 2048, true);
    c.hidden_size = 256;
    c.intermediate_size = 1024;
    c.num_attention_heads = 4;
    c.head_dim = 64;
    train::TrainOptions o;
    o.zero_stage = stage;
    o.learning_rate = 1e-4;
    o.lr_scheduler_type = "constant";
    o.max_grad_norm = 1.0;
    o.gradient_checkpointing = true;  // the bound below is for per-layer checkpointing
    train::TrainStrategy s(model::Transformer::random(c, at::kFloat, 1, 0.02), o, pg);
    for (int64_t step = 0; step < 2; ++step) {
      TokenBatch b = make_batch(2, 16, 2048, 50 + step + ctx->rank);
      s.train_step(1, [&](int64_t) { return micro_loss(s, b, b.loss_mask.sum().item<double>() * 2, 1, 2); });
    }
    std::ofstream(fmt::format("{}/peak-{}.txt", ctx->dir, ctx->rank)) << status_kb("VmHWM:") - base;
    return;
  }
  int64_t peak[2] = {0, 0};
  for (int which = 0; which < 2; ++which) {
    const int stage = which == 0 ? 0 : 3;
    RunOptions o;
    o.timeout_s = 120;
    o.env = {{"ROLL_TEST_STAGE", std::to_string(stage)}};
    o.dir = make_scratch_dir();
    expect_all_ok(run_ranks(2, o));
    for (int r = 0; r < 2; ++r) peak[which] = std::max(peak[which], read_number(fmt::format("{}/peak-{}.txt", o.dir, r)));
    std::filesystem::remove_all(o.dir);
  }
  // Recorded in docs/training.md (tensor bytes: params + grads + AdamW moments are 4 x 49 MB at
  // stage 0 and half of that at stage 3, plus activations and gathered layers).
  std::printf("{\"test\":\"train_memory\",\"model\":\"12x256, vocab 2048, fp32, AdamW\",\"ranks\":2,"
              "\"peak_rss_growth_kb\":{\"dp\":%lld,\"zero3\":%lld}}\n",
              static_cast<long long>(peak[0]), static_cast<long long>(peak[1]));
  EXPECT_GT(peak[0], 0);
  EXPECT_GT(peak[1], 0);
  EXPECT_LT(peak[1], peak[0] * 3 / 4) << "ZeRO-3 peak " << peak[1] << " kB, plain DP " << peak[0] << " kB";
}
