// Checkpoints: kill-and-resume is bit-identical, incomplete directories are never loaded,
// pruning, HF layout.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "multiprocess.h"
#include "roll/core/error.h"
#include "roll/model/safetensors.h"
#include "roll/train/checkpoint.h"
#include "roll/train/strategy.h"
#include "train_test_util.h"

using namespace roll;
using namespace roll::test;
namespace fs = std::filesystem;

namespace {

train::TrainOptions adamw_options(int stage) {
  train::TrainOptions o;
  o.learning_rate = 1e-2;
  o.lr_scheduler_type = "cosine";
  o.warmup_steps = 1;
  o.total_steps = 6;
  o.weight_decay = 0.01;
  o.zero_stage = stage;
  o.gradient_accumulation_steps = 2;
  o.max_ckpt_to_keep = 2;
  o.max_grad_norm = 1.0;
  o.gradient_checkpointing = true;
  return o;
}

// Steps [from, to): the data of step k depends only on k (and the rank), as a resumed pipeline's does.
void run_steps(train::TrainStrategy& s, int64_t from, int64_t to) {
  const int world = s.world_size(), rank = s.rank();
  for (int64_t k = from; k < to; ++k) {
    TokenBatch full = make_batch(8, 12, 96, 1000 + k);
    const double tokens = full.loss_mask.sum().item<double>();
    const int64_t share = 8 / world, micro = share / 2;
    TokenBatch mine = full.rows(rank * share, (rank + 1) * share);
    // A little randomness from the global generator, whose state the checkpoint carries.
    const double jitter = 1.0 + 0.01 * at::rand({1}).item<double>();
    s.train_step(2, [&](int64_t i) {
      return micro_loss(s, mine.rows(i * micro, (i + 1) * micro), tokens, 2, world) * jitter;
    });
  }
}

void dump(train::TrainStrategy& s, const std::string& path) {
  model::NamedTensors all = s.full_parameters();
  for (auto& [n, t] : s.export_state().tensors) all.emplace_back("state." + n, t);
  all.emplace_back("global_step", at::full({1}, s.global_step(), at::kLong));
  model::write_safetensors(path, all);
}

}  // namespace

TEST(TrainCheckpoint, KillAndResumeIsBitIdentical) {
  // Two layouts in the same processes: ZeRO-2 with a bf16 model (fp32 master weights in the
  // state) and ZeRO-3 with an fp32 model (sharded parameters).
  const std::vector<std::pair<int, at::ScalarType>> configs = {{2, at::kBFloat16}, {3, at::kFloat}};
  if (auto ctx = child_context()) {
    at::set_num_threads(ctx->threads);
    const std::string phase = ctx->env.at("ROLL_TEST_PHASE");
    auto pg = child_group(*ctx);
    for (size_t c = 0; c < configs.size(); ++c) {
      at::manual_seed(11);
      train::TrainStrategy s(tiny_model(configs[c].second), adamw_options(configs[c].first), pg);
      const std::string ckpts = fmt::format("{}/ckpt-{}", ctx->dir, c);
      if (phase == "full") {
        run_steps(s, 0, 6);
        dump(s, fmt::format("{}/full-{}-{}.safetensors", ctx->dir, c, ctx->rank));
      } else if (phase == "first") {
        run_steps(s, 0, 3);
        train::save_checkpoint(s, ckpts, 3);
      } else {
        auto latest = train::latest_checkpoint(ckpts);
        ASSERT_TRUE(latest.has_value());
        EXPECT_EQ(fs::path(*latest).filename(), "checkpoint-3");
        train::load_checkpoint(s, *latest);
        EXPECT_EQ(s.global_step(), 3);
        run_steps(s, 3, 6);
        dump(s, fmt::format("{}/resumed-{}-{}.safetensors", ctx->dir, c, ctx->rank));
      }
    }
    if (phase == "first") {
      pg->barrier();
      raise(SIGKILL);  // no destructors, no flush: as abrupt as a crash
    }
    return;
  }
  const std::string dir = make_scratch_dir();
  auto with = [&](const char* phase) {
    RunOptions o;
    o.timeout_s = 90;
    o.env = {{"ROLL_TEST_PHASE", phase}};
    o.dir = dir;
    return o;
  };
  expect_all_ok(run_ranks(2, with("full")));
  for (const auto& r : run_ranks(2, with("first"))) EXPECT_EQ(r.exit_code, -SIGKILL) << r.log;
  expect_all_ok(run_ranks(2, with("resume")));
  for (size_t c = 0; c < configs.size(); ++c)
    for (int r = 0; r < 2; ++r) {
      auto a = model::SafetensorsFile::open(fmt::format("{}/full-{}-{}.safetensors", dir, c, r));
      auto b = model::SafetensorsFile::open(fmt::format("{}/resumed-{}-{}.safetensors", dir, c, r));
      ASSERT_EQ(a->entries().size(), b->entries().size());
      for (const auto& e : a->entries())
        EXPECT_TRUE(at::equal(a->get(e.name), b->get(e.name)))
            << "ZeRO-" << configs[c].first << " rank " << r << " " << e.name;
    }
  fs::remove_all(dir);
}

TEST(TrainCheckpoint, IncompleteOrTruncatedDirectoriesAreNeverLoaded) {
  const std::string root = make_scratch_dir();
  train::TrainOptions o = adamw_options(0);
  o.max_ckpt_to_keep = 0;
  train::TrainStrategy s(tiny_model(), o);
  run_steps(s, 0, 1);
  const std::string good = train::save_checkpoint(s, root, 1);
  EXPECT_EQ(train::checkpoint_problem(good), "");
  run_steps(s, 1, 2);
  const std::string newer = train::save_checkpoint(s, root, 2);
  // Truncate a weight file of the newer checkpoint: refused, and latest falls back to the older.
  fs::resize_file(fs::path(newer) / "model.safetensors", fs::file_size(fs::path(newer) / "model.safetensors") / 2);
  EXPECT_NE(train::checkpoint_problem(newer).find("model.safetensors"), std::string::npos);
  EXPECT_THROW(train::load_checkpoint(s, newer), roll::Error);
  EXPECT_EQ(train::latest_checkpoint(root), good);
  // A write that never finished: the .partial directory, and a renamed copy without manifest.
  fs::copy(good, fs::path(root) / ".checkpoint-9.partial", fs::copy_options::recursive);
  fs::copy(good, fs::path(root) / "checkpoint-8", fs::copy_options::recursive);
  fs::remove(fs::path(root) / "checkpoint-8" / "manifest.json");
  EXPECT_EQ(train::latest_checkpoint(root), good);
  EXPECT_NE(train::checkpoint_problem(root + "/checkpoint-8").find("manifest"), std::string::npos);
  EXPECT_NE(train::checkpoint_problem(root + "/.checkpoint-9.partial"), "");
  // A missing train-state file is named.
  fs::copy(good, fs::path(root) / "checkpoint-7", fs::copy_options::recursive);
  fs::remove(fs::path(root) / "checkpoint-7" / "train_state" / "rank-00000-of-00001.safetensors");
  EXPECT_NE(train::checkpoint_problem(root + "/checkpoint-7").find("rank-00000-of-00001"), std::string::npos);
  // The good one loads.
  EXPECT_NO_THROW(train::load_checkpoint(s, good));
  EXPECT_EQ(s.global_step(), 1);
  fs::remove_all(root);
}

TEST(TrainCheckpoint, HfLayoutTokenizerFilesAndPruning) {
  const std::string root = make_scratch_dir(), model_dir = make_scratch_dir();
  std::ofstream(model_dir + "/tokenizer.json") << "{\"model\": {}}";
  std::ofstream(model_dir + "/tokenizer_config.json") << "{}";
  std::ofstream(model_dir + "/model.safetensors") << "not copied";
  train::TrainOptions o = adamw_options(0);
  o.tokenizer_dir = model_dir;
  o.max_ckpt_to_keep = 2;
  train::TrainStrategy s(tiny_model(at::kBFloat16), o);
  for (int64_t step = 1; step <= 4; ++step) {
    run_steps(s, step - 1, step);
    train::save_checkpoint(s, root, step);
  }
  EXPECT_FALSE(fs::exists(root + "/checkpoint-1"));
  EXPECT_FALSE(fs::exists(root + "/checkpoint-2"));
  EXPECT_TRUE(fs::exists(root + "/checkpoint-3"));
  const std::string last = root + "/checkpoint-4";
  EXPECT_TRUE(fs::exists(last + "/tokenizer.json"));
  EXPECT_TRUE(fs::exists(last + "/tokenizer_config.json"));
  // The weights are a loadable HF model equal to the trained one.
  auto loaded = model::Transformer::load(last, at::kBFloat16);
  auto params = s.full_parameters();
  for (size_t k = 0; k < params.size(); ++k)
    EXPECT_TRUE(at::equal(loaded->named_parameters()[k].second, params[k].second)) << params[k].first;
  fs::remove_all(root);
  fs::remove_all(model_dir);
}

TEST(TrainCheckpoint, LayoutMismatchIsRefused) {
  const std::string root = make_scratch_dir();
  train::TrainStrategy s(tiny_model(), adamw_options(0));
  run_steps(s, 0, 1);
  const std::string dir = train::save_checkpoint(s, root, 1);
  train::TrainStrategy other(tiny_model(at::kFloat, 7, 3), adamw_options(0));  // 3 layers
  EXPECT_THROW(train::load_checkpoint(other, dir), roll::Error);
  fs::remove_all(root);
}
