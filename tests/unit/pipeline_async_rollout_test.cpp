// The asynchronous RLVR rollout (docs/pipelines.md "Asynchronous generation") over fake workers:
// generation runs ahead of training within ceil(B * ratio) prompts, a later step takes the older
// prompts first (off-policy), a pause aborts what generates and the cut-off samples continue after
// the next resume as one sequence whose tokens keep the weight version that sampled them, and a
// dead worker or a failed generation fails get_batch with the domain and the prompt named.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "roll/core/error.h"
#include "roll/pipeline/rollout/async_rollout.h"

namespace roll::pipeline {
namespace {

constexpr int64_t kB = 2, kN = 2, kMaxNew = 4;

// Requests finish at once while `auto_finish`; otherwise they run until aborted. Held (suspended)
// requests wait for resume. Every sampled token carries `version`.
struct FakeWorld {
  std::mutex mu;
  bool auto_finish = true, suspended = false, fail_generation = false;
  int64_t version = 0;
  std::map<std::string, std::pair<GenerationRequest, AsyncRolloutOps::Generated>> held, running;
  std::map<int64_t, RequestOutput> scored;  // what score() saw, by prompt id
  std::vector<GenerationRequest> sent;
  std::optional<std::string> dead;

  SampleOutput tokens(int64_t count, FinishReason reason) {
    SampleOutput s;
    for (int64_t k = 0; k < count; ++k) {
      s.token_ids.push_back(static_cast<int32_t>(10 + k));
      s.logprobs.push_back(-0.5f);
      s.weight_versions.push_back(version);
    }
    s.finish_reason = reason;
    return s;
  }

  RequestOutput answer(const GenerationRequest& r, bool aborted) {
    RequestOutput o;
    o.request_id = r.request_id;
    o.prompt_token_ids = r.prompt_token_ids;
    for (int64_t j = 0; j < r.params.n; ++j)
      o.samples.push_back(aborted ? tokens(1, FinishReason::abort) : tokens(r.params.max_new_tokens, FinishReason::length));
    return o;
  }

  AsyncRolloutOps ops() {
    AsyncRolloutOps o;
    o.draw = [](int64_t id) {
      Batch b(1);
      b.set_tensor("input_ids", at::full({1, 3}, id, at::kLong));
      return b;
    };
    o.request = [](int64_t id, const Batch& prompt) {
      GenerationRequest r;
      r.prompt_token_ids = {1, 2, static_cast<int32_t>(prompt.tensor("input_ids")[0][0].item<int64_t>())};
      r.params.n = kN;
      r.params.max_new_tokens = kMaxNew;
      r.params.seed = 100 + static_cast<uint64_t>(id);
      return r;
    };
    o.generate = [this](GenerationRequest r, const std::string&, AsyncRolloutOps::Generated done) {
      std::unique_lock<std::mutex> lk(mu);
      sent.push_back(r);
      if (fail_generation) {
        lk.unlock();
        return done(std::nullopt, "engine exploded");
      }
      if (suspended) {
        held[r.request_id] = {r, done};
        return;
      }
      if (!auto_finish) {
        running[r.request_id] = {r, done};
        return;
      }
      RequestOutput out = answer(r, false);
      lk.unlock();
      done(std::move(out), "");
    };
    o.abort = [this](const std::string& rid) {
      std::unique_lock<std::mutex> lk(mu);
      for (auto* m : {&held, &running}) {
        auto it = m->find(rid);
        if (it == m->end()) continue;
        auto [r, done] = std::move(it->second);
        m->erase(it);
        RequestOutput out = m == &held ? aborted_output(rid, r.params.n) : answer(r, true);
        lk.unlock();
        return done(std::move(out), "");
      }
    };
    o.suspend = [this] {
      std::lock_guard<std::mutex> g(mu);
      suspended = true;
    };
    o.resume = [this] {
      std::unique_lock<std::mutex> lk(mu);
      suspended = false;
      auto released = std::move(held);
      held.clear();
      for (auto& [rid, rd] : released) {
        if (!auto_finish) {
          running[rid] = std::move(rd);
          continue;
        }
        RequestOutput out = answer(rd.first, false);
        lk.unlock();
        rd.second(std::move(out), "");
        lk.lock();
      }
    };
    o.score = [this](int64_t id, const Batch&, RequestOutput out, AsyncRolloutOps::Done done) {
      {
        std::lock_guard<std::mutex> g(mu);
        scored[id] = out;
      }
      Batch rows(kN);
      rows.set_tensor("scores", at::tensor(std::vector<float>{1.f, 0.f}));
      rows.set_tensor("prompt", at::full({kN}, id, at::kLong));
      done(std::move(rows), "");
    };
    o.failure = [this]() -> std::optional<std::string> {
      std::lock_guard<std::mutex> g(mu);
      return dead;
    };
    return o;
  }
};

AsyncRolloutOptions options(double ratio = 1.0) {
  AsyncRolloutOptions o;
  o.domain = "math";
  o.batch_size = kB;
  o.samples_per_prompt = kN;
  o.async_generation_ratio = ratio;
  o.sequence_length = 64;
  o.max_filtered_in_a_row = 100;
  o.timeout = std::chrono::seconds(20);
  return o;
}

TEST(PipelineAsyncRollout, GenerationRunsAheadAndLaterStepsTakeOlderPromptsFirst) {
  FakeWorld w;
  AsyncRollout r(options(1.0), w.ops());
  AsyncBatch b0 = r.get_batch(0);
  ASSERT_EQ(b0.ids.size(), static_cast<size_t>(kB));
  EXPECT_EQ(b0.start_steps, (std::vector<int64_t>{0, 0}));
  for (const auto& s : b0.samples) EXPECT_EQ(s.size(), kN);
  r.pause();  // before the model update
  {
    std::lock_guard<std::mutex> g(w.mu);
    EXPECT_EQ(static_cast<int64_t>(w.scored.size()), 2 * kB) << "B prompts beyond step 0's ran ahead (ratio 1)";
  }
  AsyncBatch b1 = r.get_batch(1);
  EXPECT_EQ(b1.start_steps, (std::vector<int64_t>{0, 0})) << "the prompts generated during training come first";
  EXPECT_EQ(b1.drawn, kB) << "step 1's own prompts started and stay buffered";
  r.pause();
  AsyncBatch b2 = r.get_batch(2);
  EXPECT_EQ(b2.start_steps, (std::vector<int64_t>{1, 1}));
  r.stop();
  EXPECT_THROW(r.get_batch(3), Error) << "a stopped rollout answers no more";
}

TEST(PipelineAsyncRollout, APausedSampleContinuesUnderTheNewWeightsAsOneSequence) {
  FakeWorld w;
  AsyncRollout r(options(1.0), w.ops());
  r.get_batch(0);  // prompts 0-3 finish at once; 2 and 3 stay buffered
  r.pause();
  {
    std::lock_guard<std::mutex> g(w.mu);
    w.auto_finish = false;  // from now on requests run until aborted
    w.version = 1;          // the model update of step 1
  }
  AsyncBatch b1 = r.get_batch(1);  // served from the buffer; prompts 4 and 5 start and keep running
  EXPECT_EQ(b1.start_steps, (std::vector<int64_t>{0, 0}));
  r.pause();  // aborts 4 and 5 after one token each
  {
    std::lock_guard<std::mutex> g(w.mu);
    EXPECT_TRUE(w.running.empty() && w.held.empty()) << "nothing generates while paused";
    w.auto_finish = true;
    w.version = 2;
  }
  AsyncBatch b2 = r.get_batch(2);
  std::sort(b2.ids.begin(), b2.ids.end());
  ASSERT_EQ(b2.ids, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(b2.start_steps, (std::vector<int64_t>{1, 1})) << "a continued prompt keeps its start step";
  EXPECT_EQ(b2.continuations, kB * kN) << "one continuation per cut-off sample";
  std::lock_guard<std::mutex> g(w.mu);
  for (int64_t id : b2.ids) {
    const RequestOutput& out = w.scored.at(id);
    ASSERT_EQ(out.samples.size(), static_cast<size_t>(kN));
    for (const SampleOutput& s : out.samples) {
      EXPECT_EQ(s.token_ids, (std::vector<int32_t>{10, 10, 11, 12})) << "1 token before the pause + the 3 left";
      EXPECT_EQ(s.weight_versions, (std::vector<int64_t>{1, 2, 2, 2}));
      EXPECT_EQ(s.logprobs.size(), s.token_ids.size());
      EXPECT_EQ(s.finish_reason, FinishReason::length);
    }
  }
  // The continuation requests: the prompt + the partial token, one sample, the rest of the budget.
  int continuations = 0;
  for (const auto& req : w.sent) {
    if (req.request_id.find("-c1-") == std::string::npos) continue;
    ++continuations;
    EXPECT_EQ(req.prompt_token_ids.size(), 4u);
    EXPECT_EQ(req.prompt_token_ids.back(), 10);
    EXPECT_EQ(req.params.n, 1);
    EXPECT_EQ(req.params.max_new_tokens, kMaxNew - 1);
  }
  EXPECT_EQ(continuations, kB * kN);
}

TEST(PipelineAsyncRollout, ADeadWorkerFailsTheStepNamingIt) {
  FakeWorld w;
  w.auto_finish = false;
  AsyncRollout r(options(1.0), w.ops());
  {
    std::lock_guard<std::mutex> g(w.mu);
    w.dead = "actor_infer rank 0 (pid 42) exited with status 9";
  }
  try {
    r.get_batch(0);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("math"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("actor_infer rank 0"), std::string::npos) << e.what();
  }
}

TEST(PipelineAsyncRollout, AFailedGenerationNamesThePrompt) {
  FakeWorld w;
  w.fail_generation = true;
  AsyncRollout r(options(2.0), w.ops());
  try {
    r.get_batch(0);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("prompt 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("engine exploded"), std::string::npos) << e.what();
  }
  EXPECT_THROW(AsyncRollout(options(0.0), w.ops()), ConfigError) << "ratio 0 is the synchronous scheduler's";
}

}  // namespace
}  // namespace roll::pipeline
