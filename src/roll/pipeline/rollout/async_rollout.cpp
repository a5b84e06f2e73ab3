#include "roll/pipeline/rollout/async_rollout.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/pipeline/rollout/partial_rollout.h"
#include "roll/pipeline/rollout/replay_buffer.h"

namespace roll::pipeline {
namespace {

enum class Kind { generated, scored, get_batch, pause, stop };

struct Event {
  Kind kind = Kind::generated;
  int64_t id = 0;
  std::string rid;                         // generated: the request that answered
  std::optional<RequestOutput> generated;  // generated
  std::optional<Batch> scored;             // scored
  std::string error;
  int64_t step = 0;                                      // get_batch
  std::shared_ptr<std::promise<AsyncBatch>> batch;       // get_batch
  std::shared_ptr<std::promise<void>> done;              // pause, stop
};

enum class Stage { generating, parked, scoring };

struct Live {
  Batch prompt;
  GenerationRequest request;  // the original request (n samples)
  RequestOutput output;       // what has been generated so far
  std::map<std::string, int64_t> in_flight;  // request id -> sample index (-1: the original request)
  Stage stage = Stage::generating;
  bool dropped = false;  // its group was dropped: answers are discarded
  int64_t attempt = 0;   // continuation rounds sent
};

}  // namespace

struct AsyncRollout::Impl : std::enable_shared_from_this<AsyncRollout::Impl> {
  AsyncRolloutOptions o;
  AsyncRolloutOps ops;
  ReplayBuffer buffer;

  std::mutex mu;  // the inbox only; everything below it belongs to the scheduler thread
  std::condition_variable cv;
  std::deque<Event> inbox;
  std::thread thread;
  bool stopped = false;  // guarded by mu (set once the thread ends)

  std::map<int64_t, Live> live;
  std::map<int64_t, Batch> committed;  // passed the filter, not yet taken
  std::map<int64_t, nlohmann::json> committed_metrics;
  bool paused = true;
  bool stopping = false;
  std::string error;
  Event pending_batch;  // a get_batch waiting for prompts (batch == null when none)
  std::vector<std::shared_ptr<std::promise<void>>> pending_pause, pending_stop;
  AsyncBatch counts;  // drawn / filtered / dropped_stale / continuations since the last batch
  int64_t filtered_in_a_row = 0;
  std::chrono::steady_clock::time_point last_answer = std::chrono::steady_clock::now();

  Impl(AsyncRolloutOptions options, AsyncRolloutOps operations)
      : o(std::move(options)),
        ops(std::move(operations)),
        buffer(ReplayBufferOptions{o.async_generation_ratio, o.use_additional_prompts, o.max_additional_running_prompts}) {}

  void push(Event e) {
    {
      std::lock_guard<std::mutex> g(mu);
      inbox.push_back(std::move(e));
    }
    cv.notify_one();
  }

  void run() {
    for (;;) {
      std::optional<Event> e;
      {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait_for(lk, std::chrono::milliseconds(200), [&] { return !inbox.empty(); });
        if (!inbox.empty()) {
          e = std::move(inbox.front());
          inbox.pop_front();
        }
      }
      try {
        if (e) handle(std::move(*e));
        else check_workers();
        if (error.empty() && !paused) start_more();
        settle();
      } catch (const std::exception& ex) {
        fail(fmt::format("domain '{}': {}", o.domain, ex.what()));
        settle();
      }
      if (stopping && nothing_in_flight()) break;
    }
    for (auto& p : pending_stop) p->set_value();
    std::lock_guard<std::mutex> g(mu);
    stopped = true;
  }

  bool nothing_in_flight() const {
    for (const auto& [id, l] : live)
      if (!l.in_flight.empty() || l.stage == Stage::scoring) return false;
    return true;
  }

  void check_workers() {
    if (ops.failure)
      if (auto why = ops.failure()) fail(fmt::format("domain '{}': rollout stopped: {}", o.domain, *why));
    const bool waiting = pending_batch.batch || !pending_pause.empty();
    if (waiting && error.empty() && std::chrono::steady_clock::now() - last_answer > o.timeout)
      fail(fmt::format("domain '{}': no generation or reward answered for {} s ({} prompts in flight)", o.domain,
                       o.timeout.count() / 1000, live.size()));
  }

  void fail(const std::string& why) {
    if (!error.empty()) return;
    error = why;
    log::warn("{}", why);
    abort_in_flight();
  }

  void abort_in_flight() {
    for (auto& [id, l] : live)
      for (const auto& [rid, index] : l.in_flight) ops.abort(rid);
  }

  void handle(Event e) {
    switch (e.kind) {
      case Kind::generated: last_answer = std::chrono::steady_clock::now(); return on_generated(std::move(e));
      case Kind::scored: last_answer = std::chrono::steady_clock::now(); return on_scored(std::move(e));
      // A wait starts now: the time the driver spent training does not count against the workers.
      case Kind::get_batch: last_answer = std::chrono::steady_clock::now(); return on_get_batch(std::move(e));
      case Kind::pause: last_answer = std::chrono::steady_clock::now(); return on_pause(std::move(e));
      case Kind::stop:
        stopping = true;
        paused = true;
        pending_stop.push_back(e.done);
        if (pending_batch.batch) {
          pending_batch.batch->set_exception(
              std::make_exception_ptr(Error(fmt::format("domain '{}': the rollout stopped", o.domain))));
          pending_batch = Event{};
        }
        abort_in_flight();
        return;
    }
  }

  std::string rid_of(int64_t id) const { return fmt::format("async-{}-{}", o.domain, id); }

  void send(int64_t id, GenerationRequest request, int64_t index) {
    Live& l = live.at(id);
    const std::string rid = request.request_id;
    l.in_flight[rid] = index;
    l.stage = Stage::generating;
    std::weak_ptr<Impl> self = weak_from_this();
    ops.generate(std::move(request), rid_of(id), [self, id, rid](std::optional<RequestOutput> out, const std::string& err) {
      if (auto s = self.lock()) {
        Event ev;
        ev.kind = Kind::generated;
        ev.id = id;
        ev.rid = rid;
        ev.generated = std::move(out);
        ev.error = err;
        s->push(std::move(ev));
      }
    });
  }

  void start_more() {
    while (!stopping) {
      const auto id = buffer.poll();
      if (!id) return;
      ++counts.drawn;
      Live l;
      l.prompt = ops.draw(*id);
      l.request = ops.request(*id, l.prompt);
      l.request.request_id = rid_of(*id);
      GenerationRequest r = l.request;
      live.emplace(*id, std::move(l));
      send(*id, std::move(r), -1);
    }
  }

  void on_generated(Event e) {
    auto it = live.find(e.id);
    if (it == live.end()) return;  // a late answer of a prompt already gone
    Live& l = it->second;
    auto f = l.in_flight.find(e.rid);
    if (f == l.in_flight.end()) return;
    const int64_t index = f->second;
    l.in_flight.erase(f);
    if (l.dropped || !error.empty() || stopping) {
      if (l.in_flight.empty()) live.erase(it);
      return;
    }
    if (!e.generated) return fail(fmt::format("domain '{}': prompt {}: generation of {} failed: {}", o.domain, e.id, e.rid, e.error));
    if (index < 0) {
      l.output = std::move(*e.generated);
      if (static_cast<int64_t>(l.output.samples.size()) != l.request.params.n)
        return fail(fmt::format("domain '{}': prompt {}: {} samples answered, {} asked", o.domain, e.id,
                                l.output.samples.size(), l.request.params.n));
    } else {
      if (e.generated->samples.size() != 1)
        return fail(fmt::format("domain '{}': continuation {} answered {} samples", o.domain, e.rid, e.generated->samples.size()));
      append_continuation(l.output.samples.at(static_cast<size_t>(index)), e.generated->samples[0]);
    }
    if (l.in_flight.empty()) advance(e.id);
  }

  // Every request of prompt `id` has answered: score it, park it for the next resume, or continue it.
  void advance(int64_t id) {
    Live& l = live.at(id);
    bool unfinished = false;
    for (const auto& s : l.output.samples) unfinished = unfinished || is_unfinished(s);
    if (unfinished && paused) {
      l.stage = Stage::parked;
      return;
    }
    if (unfinished) {
      ++l.attempt;
      for (size_t j = 0; j < l.output.samples.size(); ++j) {
        SampleOutput& s = l.output.samples[j];
        if (!is_unfinished(s)) continue;
        auto next = continuation_request(l.request, s, static_cast<int64_t>(j), l.attempt, o.sequence_length,
                                         fmt::format("{}-c{}-{}", rid_of(id), l.attempt, j));
        if (!next) {
          s.finish_reason = FinishReason::length;  // the token budget is used up
          continue;
        }
        ++counts.continuations;
        send(id, std::move(*next), static_cast<int64_t>(j));
      }
      if (!l.in_flight.empty()) return;
    }
    l.stage = Stage::scoring;
    std::weak_ptr<Impl> self = weak_from_this();
    ops.score(id, l.prompt, l.output, [self, id](std::optional<Batch> b, const std::string& err) {
      if (auto s = self.lock()) {
        Event ev;
        ev.kind = Kind::scored;
        ev.id = id;
        ev.scored = std::move(b);
        ev.error = err;
        s->push(std::move(ev));
      }
    });
  }

  void on_scored(Event e) {
    auto it = live.find(e.id);
    if (it == live.end()) return;
    const bool dropped = it->second.dropped;
    live.erase(it);
    if (dropped || !error.empty() || stopping) return;
    if (!e.scored) return fail(fmt::format("domain '{}': prompt {}: scoring failed: {}", o.domain, e.id, e.error));
    if (rl::keep_query(e.scored->tensor("scores"), o.filter)) {
      buffer.commit(e.id);
      committed_metrics[e.id] = e.scored->meta.value("reward_metrics", nlohmann::json::object());
      committed[e.id] = std::move(*e.scored);
      filtered_in_a_row = 0;
      return;
    }
    buffer.abort(e.id);
    ++counts.filtered;
    if (o.max_filtered_in_a_row > 0 && ++filtered_in_a_row >= o.max_filtered_in_a_row)
      fail(fmt::format("domain '{}': the query filter ({}) dropped {} prompts in a row, every row of the domain once: "
                       "the batch cannot fill",
                       o.domain, o.filter_key, filtered_in_a_row));
  }

  void on_get_batch(Event e) {
    if (pending_batch.batch) {
      e.batch->set_exception(std::make_exception_ptr(Error("async rollout: get_batch while another waits")));
      return;
    }
    pending_batch = std::move(e);
    if (!error.empty()) return;
    buffer.advance_step(pending_batch.step, o.batch_size);
    paused = false;
    if (ops.resume) ops.resume();
    std::vector<int64_t> parked;
    for (const auto& [id, l] : live)
      if (l.stage == Stage::parked && !l.dropped) parked.push_back(id);
    for (int64_t id : parked) advance(id);
  }

  void on_pause(Event e) {
    pending_pause.push_back(e.done);
    if (paused) return;
    paused = true;
    if (ops.suspend) ops.suspend();
    for (int64_t id : buffer.gc()) {
      ++counts.dropped_stale;
      auto it = live.find(id);
      if (it == live.end()) continue;
      it->second.dropped = true;
      if (it->second.in_flight.empty() && it->second.stage != Stage::scoring) live.erase(it);
    }
    // Groups too old were dropped with their finished samples.
    for (auto it = committed.begin(); it != committed.end();) {
      if (buffer.start_step_of(it->first)) {
        ++it;
      } else {
        committed_metrics.erase(it->first);
        it = committed.erase(it);
      }
    }
    abort_in_flight();
  }

  // Answers the calls that can be answered now.
  void settle() {
    if (!pending_pause.empty()) {
      bool generating = false;
      for (const auto& [id, l] : live) generating = generating || !l.in_flight.empty();
      if (!generating || !error.empty()) {
        for (auto& p : pending_pause) {
          if (error.empty()) p->set_value();
          else p->set_exception(std::make_exception_ptr(Error(error)));
        }
        pending_pause.clear();
      }
    }
    if (!pending_batch.batch) return;
    if (!error.empty()) {
      pending_batch.batch->set_exception(std::make_exception_ptr(Error(error)));
      pending_batch = Event{};
      return;
    }
    auto taken = buffer.take_batch(o.batch_size, o.samples_per_prompt);
    if (!taken) return;
    AsyncBatch out = std::move(counts);
    counts = AsyncBatch{};
    for (const auto& t : *taken) {
      out.ids.push_back(t.prompt_id);
      out.start_steps.push_back(t.start_step);
      out.samples.push_back(std::move(committed.at(t.prompt_id)));
      out.reward_metrics.push_back(std::move(committed_metrics.at(t.prompt_id)));
      committed.erase(t.prompt_id);
      committed_metrics.erase(t.prompt_id);
    }
    out.buffered = buffer.finished();
    pending_batch.batch->set_value(std::move(out));
    pending_batch = Event{};
  }
};

AsyncRollout::AsyncRollout(AsyncRolloutOptions options, AsyncRolloutOps ops)
    : impl_(std::make_shared<Impl>(std::move(options), std::move(ops))) {
  const auto& op = impl_->ops;
  if (!op.draw || !op.request || !op.generate || !op.abort || !op.score)
    throw Error("async rollout: draw, request, generate, abort and score are needed");
  if (impl_->o.async_generation_ratio <= 0)
    throw ConfigError("async_generation_ratio", "the asynchronous rollout needs async_generation_ratio > 0");
  impl_->thread = std::thread([impl = impl_] { impl->run(); });
}

AsyncRollout::~AsyncRollout() {
  try {
    stop();
  } catch (const std::exception& e) {
    log::warn("async rollout of domain '{}': {}", impl_->o.domain, e.what());
  }
  if (impl_->thread.joinable()) impl_->thread.detach();  // stop() timed out: the thread holds its own reference
}

AsyncBatch AsyncRollout::get_batch(int64_t step) {
  if (!impl_->thread.joinable()) throw Error(fmt::format("domain '{}': the rollout has stopped", impl_->o.domain));
  Event e;
  e.kind = Kind::get_batch;
  e.step = step;
  e.batch = std::make_shared<std::promise<AsyncBatch>>();
  auto answer = e.batch->get_future();
  impl_->push(std::move(e));
  return answer.get();
}

void AsyncRollout::pause() {
  if (!impl_->thread.joinable()) throw Error(fmt::format("domain '{}': the rollout has stopped", impl_->o.domain));
  Event e;
  e.kind = Kind::pause;
  e.done = std::make_shared<std::promise<void>>();
  auto answer = e.done->get_future();
  impl_->push(std::move(e));
  answer.get();
}

void AsyncRollout::stop() {
  if (!impl_->thread.joinable()) return;
  Event e;
  e.kind = Kind::stop;
  e.done = std::make_shared<std::promise<void>>();
  auto answer = e.done->get_future();
  impl_->push(std::move(e));
  // Aborted requests answer at once; one that does not belongs to a worker that is gone.
  const auto wait = std::min<std::chrono::milliseconds>(impl_->o.timeout, std::chrono::minutes(2));
  if (answer.wait_for(wait) != std::future_status::ready)
    throw Error(fmt::format("domain '{}': requests still in flight {} s after the rollout stopped", impl_->o.domain,
                            wait.count() / 1000));
  impl_->thread.join();
}

}  // namespace roll::pipeline
