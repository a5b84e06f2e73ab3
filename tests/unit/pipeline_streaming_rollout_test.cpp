// The generate_opt_level 1 scheduler (docs/pipelines.md) over fake workers: filtered prompts are replaced
// until the batch is full, the batch comes back in draw order, additional prompts run within their
// limit and are aborted once the batch is full, errors and dead workers stop the step with the
// domain named, and a filter that never passes fails after one pass over the rows.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "roll/core/error.h"
#include "roll/pipeline/rollout/streaming_rollout.h"

namespace roll::pipeline {
namespace {

constexpr int64_t kN = 2;  // samples per prompt

Batch prompt_row(int64_t id) {
  Batch b(1);
  b.set_tensor("input_ids", at::full({1, 3}, id, at::kLong));
  return b;
}

// The fake world: scores of prompt `id` come from `scores_of`; generation answers at once unless
// `deferred`, in which case the test answers through answer().
struct FakeWorkers {
  std::function<std::vector<float>(int64_t id)> scores_of = [](int64_t) { return std::vector<float>{1.f, 0.f}; };
  bool deferred = false;
  std::mutex mu;
  std::condition_variable cv;
  std::map<int64_t, StreamingOps::Generated> pending;  // deferred generations
  std::vector<int64_t> drawn, aborted;
  int64_t max_in_flight = 0, in_flight = 0;
  std::optional<std::string> dead;

  StreamingOps ops() {
    StreamingOps o;
    o.draw = [this](int64_t id) {
      drawn.push_back(id);
      return prompt_row(id);
    };
    o.generate = [this](int64_t id, const Batch& prompt, StreamingOps::Generated done) {
      EXPECT_EQ(prompt.tensor("input_ids")[0][0].item<int64_t>(), id);
      std::unique_lock<std::mutex> lk(mu);
      max_in_flight = std::max(max_in_flight, ++in_flight);
      if (!deferred) {
        --in_flight;
        lk.unlock();
        return done(generated(id), "");
      }
      pending[id] = std::move(done);
      cv.notify_all();
    };
    o.abort = [this](int64_t id) {
      std::unique_lock<std::mutex> lk(mu);
      aborted.push_back(id);
      auto it = pending.find(id);
      if (it == pending.end()) return;
      auto done = std::move(it->second);
      pending.erase(it);
      --in_flight;
      lk.unlock();
      done(generated(id), "");  // an aborted request still answers (finish reason abort)
    };
    o.score = [this](int64_t id, RequestOutput answer, StreamingOps::Done done) {
      EXPECT_EQ(answer.request_id, std::to_string(id));
      Batch rows(kN);
      rows.set_tensor("scores", at::tensor(scores_of(id)));
      rows.set_tensor("prompt", at::full({kN}, id, at::kLong));
      rows.meta["reward_metrics"] = {{"calls", {1}}};
      done(std::move(rows), "");
    };
    o.failure = [this] { return dead; };
    return o;
  }

  static RequestOutput generated(int64_t id) {
    RequestOutput out;
    out.request_id = std::to_string(id);
    return out;
  }

  // Test side of deferred generation: waits until `count` generations are pending, then answers `id`.
  void wait_pending(size_t count) {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return pending.size() >= count; });
  }
  void answer(int64_t id) {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return pending.count(id) != 0; });
    auto done = std::move(pending[id]);
    pending.erase(id);
    --in_flight;
    lk.unlock();
    done(generated(id), "");
  }
};

StreamingOptions options(int64_t batch_size, int64_t max_prompts) {
  StreamingOptions o;
  o.domain = "math_rule";
  o.batch_size = batch_size;
  o.max_prompts = max_prompts;
  o.filter_key = "rewards.math_rule.query_filter_config";
  o.timeout = std::chrono::seconds(60);
  return o;
}

std::vector<int64_t> prompts_of(const StreamingResult& r) {
  std::vector<int64_t> out;
  for (const auto& b : r.samples) out.push_back(b.tensor("prompt")[0].item<int64_t>());
  return out;
}

TEST(PipelineStreamingRollout, NoFilterDrawsExactlyTheBatch) {
  FakeWorkers w;
  StreamingResult r = run_streaming_rollout(options(4, 100), w.ops());
  EXPECT_EQ(r.ids, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(prompts_of(r), r.ids);
  EXPECT_EQ(r.drawn, 4);
  EXPECT_EQ(w.drawn, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(r.filtered, 0);
  EXPECT_EQ(r.aborted, 0);
  EXPECT_EQ(r.reward_metrics.size(), 4u);
  EXPECT_TRUE(w.aborted.empty());
}

TEST(PipelineStreamingRollout, FilteredPromptsAreReplaced) {
  FakeWorkers w;
  // Even prompts are all correct (no learning signal): mean_filter threshold_up 1 drops them.
  w.scores_of = [](int64_t id) { return id % 2 == 0 ? std::vector<float>{1.f, 1.f} : std::vector<float>{1.f, 0.f}; };
  StreamingOptions o = options(3, 100);
  o.filter.type = rl::QueryFilterType::mean_filter;
  o.filter.threshold_up = 1.0;
  o.filter.threshold_down = 0.0;
  StreamingResult r = run_streaming_rollout(o, w.ops());
  EXPECT_EQ(r.ids, (std::vector<int64_t>{1, 3, 5}));
  EXPECT_EQ(prompts_of(r), r.ids);
  EXPECT_EQ(r.filtered, 3);  // 0, 2, 4
  EXPECT_EQ(r.drawn, 6);
  EXPECT_EQ(r.reward_metrics.size(), 6u);  // every scored prompt reports, filtered or not
  EXPECT_EQ(w.max_in_flight, 1);           // answers at once: one prompt at a time
}

TEST(PipelineStreamingRollout, AdditionalPromptsRunWithinTheirLimitAndAreAbortedAtTheEnd) {
  FakeWorkers w;
  w.deferred = true;
  StreamingOptions o = options(2, 100);
  o.use_additional_prompts = true;
  o.max_additional_running_prompts = 3;
  std::thread answers([&] {
    w.wait_pending(5);  // 2 regular + 3 extra start before anything answers
    w.answer(4);        // extras finish first: they fill the batch
    w.answer(3);
  });
  StreamingResult r = run_streaming_rollout(o, w.ops());
  answers.join();
  EXPECT_EQ(w.max_in_flight, 5);
  EXPECT_EQ(r.ids, (std::vector<int64_t>{3, 4}));
  // After prompt 4 committed its extra slot went to prompt 5; 0, 1, 2 and 5 were cut off.
  EXPECT_EQ(r.drawn, 6);
  EXPECT_EQ(std::set<int64_t>(w.aborted.begin(), w.aborted.end()), (std::set<int64_t>{0, 1, 2, 5}));
  EXPECT_EQ(r.aborted, 4);
  EXPECT_EQ(r.filtered, 0);
  EXPECT_TRUE(w.pending.empty());  // nothing outlives the call
}

TEST(PipelineStreamingRollout, WithoutAdditionalPromptsOnlyTheBatchRuns) {
  FakeWorkers w;
  w.deferred = true;
  std::thread answers([&] {
    w.wait_pending(3);
    for (int64_t id : {2, 0, 1}) w.answer(id);
  });
  StreamingResult r = run_streaming_rollout(options(3, 100), w.ops());
  answers.join();
  EXPECT_EQ(w.max_in_flight, 3);
  EXPECT_EQ(r.ids, (std::vector<int64_t>{0, 1, 2}));  // draw order, whatever the finishing order
  EXPECT_EQ(r.aborted, 0);
  EXPECT_TRUE(w.aborted.empty());
}

TEST(PipelineStreamingRollout, AFilterThatNeverPassesStopsAfterOnePass) {
  FakeWorkers w;
  w.scores_of = [](int64_t) { return std::vector<float>{0.f, 0.f}; };
  StreamingOptions o = options(2, 7);
  o.filter.type = rl::QueryFilterType::std_filter;
  o.filter.std_threshold = 0.0;
  try {
    run_streaming_rollout(o, w.ops());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("only 0 of 2 prompts"), std::string::npos) << what;
    EXPECT_NE(what.find("rewards.math_rule.query_filter_config"), std::string::npos) << what;
  }
  EXPECT_EQ(w.drawn.size(), 7u);
}

TEST(PipelineStreamingRollout, AFailedGenerationIsReportedAfterTheOthersDrain) {
  FakeWorkers w;
  StreamingOps ops = w.ops();
  auto generate = ops.generate;
  ops.generate = [generate](int64_t id, const Batch& prompt, StreamingOps::Generated done) {
    if (id == 1) return done(std::nullopt, "actor_infer-0 answered an error");
    generate(id, prompt, std::move(done));
  };
  try {
    run_streaming_rollout(options(3, 100), ops);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("domain 'math_rule': prompt 1: actor_infer-0 answered an error"), std::string::npos) << what;
  }
}

TEST(PipelineStreamingRollout, ADeadWorkerOrSilenceStopsTheWait) {
  FakeWorkers w;
  w.deferred = true;  // nobody answers
  w.dead = "actor_infer-0 (cluster actor_infer, rank 0) exited with status 9";
  StreamingOptions o = options(2, 100);
  o.timeout = std::chrono::milliseconds(20);
  try {
    run_streaming_rollout(o, w.ops());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exited with status 9"), std::string::npos) << e.what();
  }
  EXPECT_EQ(std::set<int64_t>(w.aborted.begin(), w.aborted.end()), (std::set<int64_t>{0, 1}));
  FakeWorkers silent;
  silent.deferred = true;
  try {
    run_streaming_rollout(o, silent.ops());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no generation or reward answered"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace roll::pipeline
