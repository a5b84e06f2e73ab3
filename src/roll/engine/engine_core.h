#pragma once
// The inference engine behind ROLL's actor_infer (`vllm`/`sglang` strategies): requests in,
// steps of continuous batching over a paged KV cache, finished outputs out. Single-threaded
// API (the infer worker serialises calls); each step uses the ATen thread pool.
//
//   EngineCore engine(model, config);
//   engine.add_request({"r1", prompt_ids, params});   // throws roll::Error for a bad request
//   while (engine.has_unfinished()) engine.step();
//   for (auto& out : engine.outputs()) ...
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "roll/engine/engine_config.h"
#include "roll/engine/kv_cache_manager.h"
#include "roll/core/generation.h"
#include "roll/engine/step_phases.h"
#include "roll/model/safetensors.h"

namespace roll::model {
class Transformer;
}

namespace roll::engine {

struct StepStats {
  int64_t num_tokens = 0;       // tokens through the forward (prefill chunks + decodes)
  int64_t num_sampled = 0;      // tokens sampled (one per sequence that reached its end)
  int64_t num_running = 0;      // sequences running after the step
  int64_t num_waiting = 0;
  int64_t num_preempted = 0;
  int64_t num_finished = 0;     // requests that finished in this step
  double schedule_s = 0;        // wall time: scheduling and batch building,
  double forward_s = 0;         //   the model forward (attention included),
  double sample_s = 0;          //   sampling and output processing
  double draw_s = 0;            //   of which the sampler's passes over the logits
  StepPhaseSeconds forward_phases;  // forward_s by phase
};

class EngineCore {
 public:
  EngineCore(std::shared_ptr<model::Transformer> model, EngineConfig config);
  ~EngineCore();

  // Queues a request. A bad request (empty or too long prompt, token ids outside the vocabulary,
  // bad sampling params, duplicate id) throws roll::Error and leaves the engine unchanged.
  void add_request(GenerationRequest request);
  // One scheduling step: schedule, forward, sample, finish. No-op when idle.
  StepStats step();
  bool has_unfinished() const;
  // Requests finished since the last call, in the order they finished.
  std::vector<RequestOutput> outputs();
  // Stops a request; its partial output (tokens and log-probs so far, finish reason "abort" for
  // unfinished samples) is returned so the caller can resume it. nullopt for an unknown or
  // already finished id.
  std::optional<RequestOutput> abort(const std::string& request_id);
  // Convenience: queue all, step until they finish, outputs in request order.
  std::vector<RequestOutput> generate(std::vector<GenerationRequest> requests);

  // New weights, copied in place (names and shapes as Transformer::named_parameters). Cached
  // K/V was computed with the old weights: the prefix cache is reset and running requests are
  // recomputed when stepping resumes.
  void update_weights(const model::NamedTensors& weights);
  // The same, with the new weights written straight into the engine's own tensors: `fill` gets
  // them (the model's parameters, by name) and overwrites them, e.g. from a broadcast as it arrives.
  void update_weights_in_place(const std::function<void(const model::NamedTensors& own)>& fill);
  // The engine computes from `weights` themselves from now on (each of its tensors takes the
  // storage of the one of that name: no copy), e.g. views of a shared-memory file the trainer
  // rewrites while this engine is idle. Names, dtypes and shapes must match the model's. The
  // engine never writes them: a later update_weights(_in_place) first gives it its own copies.
  void share_weights(const model::NamedTensors& weights);
  // The version every token sampled from now on is stamped with (SampleOutput::weight_versions).
  // 0 until set: the weights the engine was loaded with. The caller that pushes weights sets it
  // beside update_weights; tokens already generated keep the version they were sampled under.
  void set_weight_version(int64_t version);
  int64_t weight_version() const;
  // Releases the KV cache (ROLL's offload between rollouts); running requests are kept and
  // recomputed after wake().
  void sleep();
  void wake();
  bool sleeping() const;
  void reset_prefix_cache();
  // A short request through every stage, so page faults, thread start-up and BLAS
  // initialisation happen now and not in the first real request. Leaves no trace in the cache.
  void warm_up();

  KvCacheStats cache_stats() const;
  int64_t num_preemptions() const;
  int64_t max_model_len() const;
  int64_t num_blocks() const;
  const EngineConfig& config() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace roll::engine
