#include "roll/pipeline/rollout/streaming_rollout.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>

#include "roll/core/error.h"
#include "roll/pipeline/data/prompt_budget.h"
#include "roll/pipeline/data/prompt_filter.h"

namespace roll::pipeline {
namespace {

struct Event {
  int64_t id = 0;
  bool scored = false;                     // else generated
  std::optional<RequestOutput> generated;  // what `generate` answered
  std::optional<Batch> batch;              // what `score` answered
  std::string error;

  bool ok() const { return error.empty() && (scored ? batch.has_value() : generated.has_value()); }
};

// Answers from the workers' threads, consumed by the scheduler's thread. Shared with the
// callbacks so that an answer arriving after the scheduler has given up touches nothing else.
struct Inbox {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Event> events;

  void push(Event e) {
    {
      std::lock_guard<std::mutex> g(mu);
      events.push_back(std::move(e));
    }
    cv.notify_one();
  }
};

enum class Stage { generating, scoring };

struct Running {
  PromptSlot slot = PromptSlot::none;
  Stage stage = Stage::generating;
  bool abort_sent = false;
};

class Scheduler {
 public:
  Scheduler(const StreamingOptions& o, const StreamingOps& ops)
      : o_(o), ops_(ops), budget_(o.batch_size, o.use_additional_prompts, o.max_additional_running_prompts) {}

  StreamingResult run() {
    if (o_.batch_size <= 0) return std::move(result_);
    try {
      start_more();
      while (!live_.empty()) handle(next_event());
    } catch (...) {
      close();  // stop what still generates; late answers land in the inbox only
      throw;
    }
    if (!error_.empty()) throw Error(error_);
    if (static_cast<int64_t>(committed_.size()) < o_.batch_size)
      throw_batch_not_filled(o_.domain, static_cast<int64_t>(committed_.size()), o_.batch_size, result_.drawn,
                             o_.max_prompts, o_.filter, o_.filter_key);
    std::sort(committed_.begin(), committed_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [id, b] : committed_) {
      result_.ids.push_back(id);
      result_.samples.push_back(std::move(b));
    }
    return std::move(result_);
  }

 private:
  StreamingOps::Generated generated(int64_t id) {
    return [inbox = inbox_, id](std::optional<RequestOutput> out, const std::string& error) {
      inbox->push({id, false, std::move(out), std::nullopt, error});
    };
  }

  StreamingOps::Done scored(int64_t id) {
    return [inbox = inbox_, id](std::optional<Batch> b, const std::string& error) {
      inbox->push({id, true, std::nullopt, std::move(b), error});
    };
  }

  void start_more() {
    while (!closing_ && result_.drawn < o_.max_prompts) {
      const PromptSlot slot = budget_.poll();
      if (slot == PromptSlot::none) return;
      const int64_t id = result_.drawn++;
      live_[id] = {slot, Stage::generating, false};
      Batch prompt = ops_.draw(id);
      ops_.generate(id, prompt, generated(id));
    }
  }

  // Starts nothing more; asks every prompt still generating to stop.
  void close() {
    closing_ = true;
    for (auto& [id, r] : live_)
      if (r.stage == Stage::generating && !r.abort_sent) {
        r.abort_sent = true;
        if (ops_.abort) ops_.abort(id);
      }
  }

  Event next_event() {
    auto last = std::chrono::steady_clock::now();
    const auto slice = std::min<std::chrono::milliseconds>(o_.timeout, std::chrono::milliseconds(500));
    std::unique_lock<std::mutex> lk(inbox_->mu);
    while (inbox_->events.empty()) {
      if (inbox_->cv.wait_for(lk, slice, [&] { return !inbox_->events.empty(); })) break;
      lk.unlock();
      if (ops_.failure)
        if (auto why = ops_.failure())
          throw Error(fmt::format("domain '{}': rollout stopped: {}", o_.domain, *why));
      if (std::chrono::steady_clock::now() - last > o_.timeout)
        throw Error(fmt::format("domain '{}': no generation or reward answered for {} s ({} prompts in flight)",
                                o_.domain, o_.timeout.count() / 1000, live_.size()));
      lk.lock();
    }
    Event e = std::move(inbox_->events.front());
    inbox_->events.pop_front();
    return e;
  }

  void handle(Event e) {
    auto it = live_.find(e.id);
    if (it == live_.end()) throw Error(fmt::format("domain '{}': an answer for prompt {} that is not running", o_.domain, e.id));
    Running& r = it->second;
    if (!e.ok()) {
      if (error_.empty())
        error_ = fmt::format("domain '{}': prompt {}: {}", o_.domain, e.id, e.error.empty() ? "no result" : e.error);
      finish(it, false);
      close();
      return;
    }
    if (closing_) {  // the batch is full (or failed): what still runs is dropped
      ++result_.aborted;
      finish(it, false);
      return;
    }
    if (!e.scored) {
      r.stage = Stage::scoring;
      ops_.score(e.id, std::move(*e.generated), scored(e.id));
      return;
    }
    result_.reward_metrics.push_back(e.batch->meta.value("reward_metrics", nlohmann::json::object()));
    const bool keep = rl::keep_query(e.batch->tensor("scores"), o_.filter);
    if (keep) committed_.emplace_back(e.id, std::move(*e.batch));
    else ++result_.filtered;
    finish(it, keep);
    if (static_cast<int64_t>(committed_.size()) >= o_.batch_size) close();
    start_more();
  }

  void finish(std::map<int64_t, Running>::iterator it, bool committed) {
    if (committed) budget_.commit(it->second.slot);
    else budget_.abort(it->second.slot);
    live_.erase(it);
  }

  const StreamingOptions& o_;
  const StreamingOps& ops_;
  PromptBudget budget_;
  std::shared_ptr<Inbox> inbox_ = std::make_shared<Inbox>();
  std::map<int64_t, Running> live_;
  std::vector<std::pair<int64_t, Batch>> committed_;
  StreamingResult result_;
  std::string error_;
  bool closing_ = false;
};

}  // namespace

StreamingResult run_streaming_rollout(const StreamingOptions& options, const StreamingOps& ops) {
  if (!ops.draw || !ops.generate || !ops.score) throw Error("streaming rollout: draw, generate and score are needed");
  return Scheduler(options, ops).run();
}

}  // namespace roll::pipeline
