#include "roll/memory/memory_advice.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "roll/engine/engine_config.h"
#include "roll/train/options_from_config.h"
#include "roll/workers/role_config.h"

namespace roll::memory {

int64_t largest_peak(const MemoryPlan& plan) {
  int64_t peak = 0;
  for (const auto& d : plan.devices) peak = std::max(peak, d.peak_bytes);
  return peak;
}

namespace {

// One change, in the forms to try in turn: the config's own named strategy blocks first (ROLL's
// `${deepspeed_zero3}` style), then the single keys.
struct Candidate {
  std::vector<std::vector<std::string>> forms;
  std::string why;
};

bool is_trainer(const std::string& cluster) {
  return cluster == "actor_train" || cluster == "critic" || cluster == "sft_train";
}

void trainer_candidates(const config::PipelineConfig& c, const std::string& x, bool accelerator, int64_t dp,
                        std::vector<Candidate>& out) {
  const config::WorkerConfig& w = workers::worker_config_of(c, x);
  if (w.model_args.disable_gradient_checkpointing)
    out.push_back({{{x + ".model_args.disable_gradient_checkpointing=false"}},
                   "gradient checkpointing keeps each layer's input, not its activations"});
  const train::TrainOptions o = train::train_options_from_config(c, 0.0, w, dp, c.ppo_epochs);
  const std::string strategy = w.strategy_args ? w.strategy_args->strategy_name : "fsdp2_train";
  const std::string sc = x + ".strategy_args.strategy_config";
  if (o.zero_stage < 3 && dp > 1) {
    if (strategy == "deepspeed_train")
      out.push_back({{{sc + "=${deepspeed_zero3}"}, {sc + ".zero_optimization.stage=3"}},
                     fmt::format("ZeRO-3 shards the weights too, over the {} ranks", dp)});
    else if (strategy == "fsdp2_train")
      out.push_back({{{sc + ".reshard_after_forward=true"}}, "FSDP2 resharding frees the weights after each layer"});
  }
  const int64_t pbs = w.training_args.per_device_train_batch_size;
  if (pbs > 1)
    out.push_back({{{x + ".training_args.per_device_train_batch_size=1",
                     fmt::format("{}.training_args.gradient_accumulation_steps={}", x,
                                 w.training_args.gradient_accumulation_steps * pbs)}},
                   "one sample per micro-batch, the accumulation raised to keep the global batch"});
  if (x != "sft_train" && w.infer_batch_size > 1)
    out.push_back({{{x + ".infer_batch_size=1"}}, "one sample per log-prob forward"});
  if (accelerator && strategy == "deepspeed_train" && !o.offload_optimizer)
    out.push_back({{{sc + "=${deepspeed_zero3_cpuoffload}"}, {sc + ".zero_optimization.offload_optimizer.device=cpu"}},
                   "the optimizer state and master weights move to host memory"});
}

void engine_candidates(const config::PipelineConfig& c, const MemoryPlan& plan, const std::string& x,
                       std::vector<Candidate>& out) {
  const config::WorkerConfig& w = workers::worker_config_of(c, x);
  engine::EngineConfig ec;
  if (w.strategy_args && w.strategy_args->strategy_config)
    engine::apply_strategy_config(w.strategy_args->strategy_config, x + ".strategy_args.strategy_config", ec);
  const std::string sc = x + ".strategy_args.strategy_config";
  // The engine's share shrinks by what the fullest of its devices lacks.
  int64_t over = 0;
  for (const auto& d : plan.devices)
    for (size_t i : d.workers)
      if (plan.workers[i].cluster == x) over = std::max(over, d.peak_bytes - plan.capacity.bytes);
  const double cap = static_cast<double>(plan.capacity.bytes);
  if (over > 0 && cap > 0) {
    const double util = std::floor((ec.gpu_memory_utilization - static_cast<double>(over) / cap) * 20) / 20;
    if (util >= 0.1)
      out.push_back({{{fmt::format("{}.gpu_memory_utilization={:.2f}", sc, util)}},
                     "a smaller KV cache leaves room for the workers beside the engine"});
  }
  for (const auto& wm : plan.workers) {
    if (wm.cluster != x) continue;
    for (const auto& note : wm.notes)
      if (note.find("cannot hold one sequence") != std::string::npos) {
        // The longest sequence the engine's share holds once the weights are in.
        int64_t weights = 0;
        for (const auto& p : wm.states)
          if (p.name == "weights") weights = p.bytes;
        const auto m = model_size(*w.model_args.model_name_or_path);
        if (!m) break;
        const int64_t per_token = m->kv_bytes_per_token(dtype_bytes(w.model_args.dtype));
        const int64_t fit = (static_cast<int64_t>(cap * ec.gpu_memory_utilization) - weights) / per_token / 1024 * 1024;
        if (fit > 0)
          out.push_back({{{fmt::format("{}.max_model_len={}", sc, fit)}},
                         fmt::format("a sequence of {} tokens fits the engine's KV cache", fit)});
      }
    break;
  }
}

}  // namespace

std::vector<Advice> memory_advice(const config::PipelineConfig& c, const MemoryPlan& plan, const Replan& replan) {
  std::vector<Advice> advice;
  if (!plan.complete() || plan.capacity.bytes <= 0 || plan.fits()) return advice;
  const bool accelerator = plan.platform == config::Platform::cuda || plan.platform == config::Platform::npu;
  // The clusters on a device that overflows, in placement order.
  std::vector<std::string> clusters;
  std::map<std::string, int64_t> ranks;
  for (const auto& w : plan.workers) ++ranks[w.cluster];
  for (const auto& d : plan.devices) {
    if (d.fits(plan.capacity.bytes)) continue;
    for (size_t i : d.workers)
      if (std::find(clusters.begin(), clusters.end(), plan.workers[i].cluster) == clusters.end())
        clusters.push_back(plan.workers[i].cluster);
  }
  std::vector<Candidate> candidates;
  for (const auto& x : clusters) {
    if (is_trainer(x)) trainer_candidates(c, x, accelerator, ranks[x], candidates);
    else if (x == "actor_infer") engine_candidates(c, plan, x, candidates);
    else if (x == "reference" && workers::worker_config_of(c, x).infer_batch_size > 1)
      candidates.push_back({{{x + ".infer_batch_size=1"}}, "one sample per reference forward"});
  }
  // A change is measured on the devices that overflow now.
  std::set<std::pair<int, int>> full;
  for (const auto& d : plan.devices)
    if (!d.fits(plan.capacity.bytes)) full.insert({d.node, d.device});
  auto peak_of_full = [&](const MemoryPlan& p) {
    int64_t peak = 0;
    for (const auto& d : p.devices)
      if (full.count({d.node, d.device})) peak = std::max(peak, d.peak_bytes);
    return peak;
  };
  const int64_t before = peak_of_full(plan);
  std::vector<Advice> helped;  // every change that lowers the peak, in candidate order
  for (const auto& cand : candidates)
    for (const auto& form : cand.forms) {
      auto next = replan(form);
      if (!next) continue;
      const int64_t peak = peak_of_full(*next);
      if (peak < before) helped.push_back({form, cand.why, peak, next->fits()});
      break;
    }
  for (const auto& a : helped)
    if (a.fits) advice.push_back(a);
  if (advice.empty() && helped.size() > 1) {
    // None fits alone: add the changes in order until the plan fits.
    Advice together;
    together.why = "together";
    for (const auto& a : helped) {
      together.overrides.insert(together.overrides.end(), a.overrides.begin(), a.overrides.end());
      auto next = replan(together.overrides);
      if (!next) break;
      together.peak_bytes = peak_of_full(*next);
      if (next->fits()) {
        together.fits = true;
        break;
      }
    }
    advice.push_back(together);
  }
  for (const auto& a : helped)
    if (!a.fits) advice.push_back(a);
  return advice;
}

}  // namespace roll::memory
