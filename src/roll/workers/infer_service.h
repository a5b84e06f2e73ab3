#pragma once
// The engine behind ROLL's actor_infer worker as a service: requests arrive from any thread
// (the RPC socket thread), one engine thread runs continuous batching over all of them and hands
// each finished request to its callback. Control calls (abort, suspend/resume, weight updates,
// sleep/wake) are queued to the same thread, so the EngineCore stays single-threaded.
#include <functional>
#include <memory>
#include <string>
#include <variant>

#include "roll/engine/engine_config.h"
#include "roll/core/generation.h"
#include "roll/model/safetensors.h"

namespace roll::model {
class Transformer;
}

namespace roll::workers {

struct InferStats {
  int64_t requests_done = 0;
  int64_t requests_aborted = 0;
  int64_t tokens_generated = 0;
  int64_t running = 0;    // admitted to the engine, unfinished
  int64_t held = 0;       // waiting for resume()
  bool suspended = false;
  bool sleeping = false;
};

class InferService {
 public:
  // Either an output, or why the request was refused (bad request, engine failure).
  using Result = std::variant<RequestOutput, std::string>;
  using Callback = std::function<void(Result)>;

  InferService(std::shared_ptr<model::Transformer> model, engine::EngineConfig config);
  ~InferService();  // aborts what is left (callbacks get their partial outputs)

  void submit(GenerationRequest request, Callback done);
  // The request's callback receives its partial output with finish reason "abort". False for an
  // unknown or finished id.
  bool abort(const std::string& request_id);
  void abort_all();
  // While suspended nothing new is admitted; requests already running continue.
  void suspend();
  void resume();
  // Blocking: done on the engine thread between steps.
  void update_weights(const model::NamedTensors& weights);
  // Blocking, on the engine thread: EngineCore::update_weights_in_place / share_weights.
  void update_weights_in_place(const std::function<void(const model::NamedTensors& own)>& fill);
  void share_weights(const model::NamedTensors& weights);
  // Blocking, on the engine thread like update_weights (EngineCore is single-threaded): tokens
  // sampled after it returns carry `version` (EngineCore::set_weight_version).
  void set_weight_version(int64_t version);
  int64_t weight_version();
  void sleep();
  void wake();
  // A copy of the weights the engine computes with (for bit-exactness checks after a sync).
  model::NamedTensors weights_snapshot();
  InferStats stats() const;
  int64_t max_model_len() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace roll::workers
