#include "roll/workers/infer_service.h"

#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "roll/core/busy_clock.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/engine/engine_core.h"
#include "roll/model/transformer.h"

namespace roll::workers {

struct InferService::Impl {
  std::shared_ptr<model::Transformer> model;  // the engine computes with these weights
  std::unique_ptr<engine::EngineCore> engine;
  std::thread thread;

  mutable std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  bool suspended = false;
  std::deque<std::pair<GenerationRequest, Callback>> incoming;  // not yet given to the engine
  std::deque<std::string> aborts;
  std::deque<std::function<void()>> control;  // run on the engine thread between steps
  std::map<std::string, Callback> running;    // admitted: request id -> callback (engine thread only)
  InferStats counters;

  void deliver(RequestOutput out) {
    auto it = running.find(out.request_id);
    if (it == running.end()) return;
    Callback cb = std::move(it->second);
    running.erase(it);
    bool aborted = false;
    for (const auto& s : out.samples) {
      counters.tokens_generated += static_cast<int64_t>(s.token_ids.size());
      aborted = aborted || s.finish_reason == FinishReason::abort;
    }
    {
      std::lock_guard<std::mutex> g(mu);
      ++counters.requests_done;
      if (aborted) ++counters.requests_aborted;
    }
    cb(std::move(out));
  }

  void admit(GenerationRequest r, Callback cb) {
    const std::string id = r.request_id;
    if (running.count(id)) return cb(std::string("request id '" + id + "' is already running"));
    try {
      engine->add_request(std::move(r));
    } catch (const std::exception& e) {
      return cb(std::string(e.what()));
    }
    running.emplace(id, std::move(cb));
  }

  void abort_now(const std::string& id) {
    if (auto out = engine->abort(id)) deliver(std::move(*out));
  }

  void loop() {
    for (;;) {
      std::deque<std::pair<GenerationRequest, Callback>> admit_now;
      std::deque<std::string> abort_now_ids;
      std::deque<std::function<void()>> control_now;
      {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait(lk, [&] {
          return done || !control.empty() || !aborts.empty() || (!suspended && !incoming.empty()) ||
                 engine->has_unfinished();
        });
        if (done) break;
        control_now.swap(control);
        abort_now_ids.swap(aborts);
        if (!suspended) admit_now.swap(incoming);
      }
      for (auto& fn : control_now) fn();
      for (auto& [r, cb] : admit_now) admit(std::move(r), std::move(cb));
      for (const auto& id : abort_now_ids) abort_now(id);
      if (engine->has_unfinished() && !engine->sleeping()) {
        try {
          BusyScope busy;
          engine->step();
        } catch (const std::exception& e) {
          // A failed step fails every running request rather than the worker.
          log::error("engine step failed: {}", e.what());
          for (auto& [id, cb] : running) {
            engine->abort(id);
            cb(std::string("engine step failed: ") + e.what());
          }
          running.clear();
        }
        for (auto& out : engine->outputs()) deliver(std::move(out));
      } else if (engine->sleeping() && engine->has_unfinished()) {
        // Asleep with work held: wait for wake() (a control call).
        std::unique_lock<std::mutex> lk(mu);
        cv.wait(lk, [&] { return done || !control.empty() || !aborts.empty(); });
      }
    }
    // Shutting down: every caller still waiting gets its partial output.
    std::vector<std::string> ids;
    for (const auto& [id, _] : running) ids.push_back(id);
    for (const auto& id : ids) abort_now(id);
    std::lock_guard<std::mutex> g(mu);
    for (auto& [r, cb] : incoming) cb(std::string("the infer worker is shutting down"));
    incoming.clear();
  }

  // Runs `fn` on the engine thread and waits for it.
  void run_on_engine(std::function<void()> fn) {
    auto task = std::make_shared<std::packaged_task<void()>>(std::move(fn));
    auto f = task->get_future();
    {
      std::lock_guard<std::mutex> g(mu);
      control.push_back([task] { (*task)(); });
    }
    cv.notify_all();
    f.get();
  }
};

InferService::InferService(std::shared_ptr<model::Transformer> model, engine::EngineConfig config)
    : impl_(std::make_unique<Impl>()) {
  impl_->model = model;
  impl_->engine = std::make_unique<engine::EngineCore>(std::move(model), std::move(config));
  Impl* raw = impl_.get();
  impl_->thread = std::thread([raw] { raw->loop(); });
}

InferService::~InferService() {
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    impl_->done = true;
  }
  impl_->cv.notify_all();
  impl_->thread.join();
}

void InferService::submit(GenerationRequest request, Callback done) {
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    impl_->incoming.emplace_back(std::move(request), std::move(done));
  }
  impl_->cv.notify_all();
}

bool InferService::abort(const std::string& request_id) {
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    // Not admitted yet (held by suspend): answer it at once with an empty aborted output.
    for (auto it = impl_->incoming.begin(); it != impl_->incoming.end(); ++it) {
      if (it->first.request_id != request_id) continue;
      RequestOutput out;
      out.request_id = request_id;
      out.prompt_token_ids = it->first.prompt_token_ids;
      out.samples.resize(static_cast<size_t>(std::max<int64_t>(1, it->first.params.n)));
      for (auto& s : out.samples) s.finish_reason = FinishReason::abort;
      Callback cb = std::move(it->second);
      impl_->incoming.erase(it);
      ++impl_->counters.requests_aborted;
      cb(std::move(out));
      return true;
    }
    impl_->aborts.push_back(request_id);
  }
  impl_->cv.notify_all();
  return true;
}

void InferService::abort_all() {
  std::vector<std::string> ids;
  impl_->run_on_engine([&] {
    for (const auto& [id, _] : impl_->running) ids.push_back(id);
  });
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    for (const auto& [r, _] : impl_->incoming) ids.push_back(r.request_id);
  }
  for (const auto& id : ids) abort(id);
}

void InferService::suspend() {
  std::lock_guard<std::mutex> g(impl_->mu);
  impl_->suspended = true;
}

void InferService::resume() {
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    impl_->suspended = false;
  }
  impl_->cv.notify_all();
}

void InferService::update_weights(const model::NamedTensors& weights) {
  impl_->run_on_engine([&] { impl_->engine->update_weights(weights); });
}

void InferService::update_weights_in_place(const std::function<void(const model::NamedTensors& own)>& fill) {
  impl_->run_on_engine([&] { impl_->engine->update_weights_in_place(fill); });
}

void InferService::share_weights(const model::NamedTensors& weights) {
  impl_->run_on_engine([&] { impl_->engine->share_weights(weights); });
}

void InferService::set_weight_version(int64_t version) {
  impl_->run_on_engine([&] { impl_->engine->set_weight_version(version); });
}

int64_t InferService::weight_version() {
  int64_t v = 0;
  impl_->run_on_engine([&] { v = impl_->engine->weight_version(); });
  return v;
}

void InferService::sleep() {
  impl_->run_on_engine([&] { impl_->engine->sleep(); });
}

void InferService::wake() {
  impl_->run_on_engine([&] { impl_->engine->wake(); });
}

model::NamedTensors InferService::weights_snapshot() {
  model::NamedTensors out;
  impl_->run_on_engine([&] {
    for (const auto& [name, t] : impl_->model->named_parameters()) out.emplace_back(name, t.clone());
  });
  return out;
}

InferStats InferService::stats() const {
  InferStats s;
  int64_t running = 0;
  bool sleeping = false;
  const_cast<Impl&>(*impl_).run_on_engine([&] {
    running = static_cast<int64_t>(impl_->running.size());
    sleeping = impl_->engine->sleeping();
  });
  std::lock_guard<std::mutex> g(impl_->mu);
  s = impl_->counters;
  s.running = running;
  s.sleeping = sleeping;
  s.held = static_cast<int64_t>(impl_->incoming.size());
  s.suspended = impl_->suspended;
  return s;
}

int64_t InferService::max_model_len() const { return impl_->engine->max_model_len(); }

}  // namespace roll::workers
