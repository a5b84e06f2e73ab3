#include "roll/pipeline/rollout/batch_adjust.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "roll/config/placement.h"
#include "roll/config/schema.h"
#include "roll/core/error.h"

namespace roll::pipeline {
namespace {

int64_t world_of(const config::PlacementPlan& plan, const std::string& cluster) {
  const auto* c = plan.find(cluster);
  return c && c->started ? std::max<int64_t>(1, static_cast<int64_t>(c->workers.size())) : 0;
}

// `n` distinct random rows of [0, b) (n <= b), in draw order.
std::vector<int64_t> distinct(int64_t b, int64_t n, std::mt19937_64& rng) {
  std::vector<int64_t> all(static_cast<size_t>(b));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(static_cast<size_t>(n));
  return all;
}

AdjustedBatch copy_rows(const Batch& batch, int64_t extra, std::mt19937_64& rng) {
  const int64_t b = batch.size();
  std::vector<int64_t> rows(static_cast<size_t>(b));
  std::iota(rows.begin(), rows.end(), 0);
  std::vector<int64_t> more;
  if (extra <= b) {
    more = distinct(b, extra, rng);
  } else {
    std::uniform_int_distribution<int64_t> pick(0, b - 1);
    for (int64_t i = 0; i < extra; ++i) more.push_back(pick(rng));
  }
  rows.insert(rows.end(), more.begin(), more.end());
  return {batch.take(rows), extra, 0};
}

}  // namespace

int64_t batch_divisor(const config::PipelineConfig& c, const config::PlacementPlan& plan) {
  int64_t d = 1;
  auto add = [&](int64_t x) {
    if (x > 0) d = std::lcm(d, x);
  };
  const int64_t dp = std::max<int64_t>(1, world_of(plan, "actor_train"));
  const auto& t = c.actor_train.training_args;
  add(t.per_device_train_batch_size * t.gradient_accumulation_steps * dp);
  add(c.actor_train.infer_batch_size * dp);
  if (int64_t ref = world_of(plan, "reference")) add(c.reference.infer_batch_size * ref);
  if (int64_t cr = world_of(plan, "critic")) {
    const auto& ct = c.critic.training_args;
    add(ct.per_device_train_batch_size * ct.gradient_accumulation_steps * cr);
    add(c.critic.infer_batch_size * cr);
  }
  return d;
}

AdjustedBatch adjust_batch(const Batch& batch, int64_t divisor, const std::string& mode, uint64_t seed) {
  if (mode != "copy" && mode != "delete" && mode != "auto" && mode != "random_sample")
    throw ConfigError("batch_adjust_mode", "batch_adjust_mode '" + mode + "': expected copy, delete, auto or random_sample");
  const int64_t b = batch.size();
  if (divisor <= 1 || b == 0) return {batch, 0, 0};
  std::mt19937_64 rng(seed);
  const int64_t r = b % divisor;
  if (mode == "random_sample") {
    if (b < divisor) return copy_rows(batch, divisor - b, rng);
    std::vector<int64_t> keep = distinct(b, divisor, rng);
    std::sort(keep.begin(), keep.end());
    return {batch.take(keep), 0, b - divisor};
  }
  if (r == 0) return {batch, 0, 0};
  bool copy = mode == "copy";
  if (mode == "auto") copy = r * 2 >= b || b < divisor;
  if (!copy && r >= b) copy = true;  // delete would empty the batch
  if (copy) return copy_rows(batch, divisor - r, rng);
  std::vector<int64_t> drop = distinct(b, r, rng);
  std::vector<char> dropped(static_cast<size_t>(b), 0);
  for (int64_t i : drop) dropped[static_cast<size_t>(i)] = 1;
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < b; ++i)
    if (!dropped[static_cast<size_t>(i)]) keep.push_back(i);
  return {batch.take(keep), 0, r};
}

}  // namespace roll::pipeline
