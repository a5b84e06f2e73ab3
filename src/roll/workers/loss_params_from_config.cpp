#include "roll/workers/loss_params_from_config.h"

#include <fmt/format.h>

#include "roll/core/error.h"

namespace roll::workers {
namespace {

// rl::parse_* raise roll::Error without the key; the user needs the key.
template <typename F>
auto parse_key(const std::string& key, F&& parse) {
  try {
    return parse();
  } catch (const ConfigError&) {
    throw;
  } catch (const Error& e) {
    throw ConfigError(key, fmt::format("{}: {}", key, e.what()));
  }
}

bool is_pg_worker(const config::WorkerConfig& w) { return w.worker_cls && w.worker_cls->ends_with("ActorPGWorker"); }

}  // namespace

bool agentic_loss(const config::PipelineConfig& p) { return p.kind == config::PipelineKind::agentic; }

rl::PolicyLossParams policy_loss_params(const config::PipelineConfig& p, const config::WorkerConfig& w) {
  const std::string role = w.name.value_or("actor_train");
  rl::PolicyLossParams o;
  if (is_pg_worker(w)) {
    if (!w.pg_variant)
      throw ConfigError(role + ".pg_variant", fmt::format("{}.worker_cls {} needs {}.pg_variant (vanilla, ppo, tis, "
                                                          "topr, cispo or kimi15)",
                                                          role, *w.worker_cls, role));
    o.pg_variant = parse_key(role + ".pg_variant", [&] { return rl::parse_pg_variant(*w.pg_variant); });
  }
  const bool agentic = agentic_loss(p);
  o.ratio_type = agentic ? parse_key("ratio_type", [&] { return rl::parse_ratio_type(p.ratio_type); })
                         : parse_key("importance_sampling", [&] { return rl::parse_importance_sampling(p.importance_sampling); });
  o.pg_clip = p.pg_clip;
  o.use_pg_clip_range = p.use_pg_clip_range;
  o.pg_clip_low = p.pg_clip_low;
  o.pg_clip_high = p.pg_clip_high;
  o.dual_clip_loss = p.dual_clip_loss;
  o.loss_agg_mode = parse_key("loss_agg_mode", [&] { return rl::parse_loss_agg_mode(p.loss_agg_mode); });
  o.use_kl_loss = p.use_kl_loss;
  o.kl_loss_coef = p.kl_loss_coef;
  o.entropy_loss_coef = p.entropy_loss_coef;
  o.rl_loss_coef = agentic ? 1.0 : p.rl_loss_coef;
  o.tis_lower_bound = w.tis_lower_bound;
  o.tis_upper_bound = w.tis_upper_bound;
  o.topr_positive_weight = w.topr_positive_weight;
  o.topr_negative_weight = w.topr_negative_weight;
  o.cispo_epsilon_low = w.cispo_epsilon_low;
  o.cispo_epsilon_high = w.cispo_epsilon_high;
  o.cispo_use_unified_mask = w.cispo_use_unified_mask;
  o.kimi15_tau = w.kimi15_tau;
  return o;
}

rl::TrainInferParams train_infer_params(const config::PipelineConfig& p) {
  const config::TrainInferCorrection& c = p.train_infer_correction;
  rl::TrainInferParams o;
  o.is_weight.enabled = c.is_weight.enabled;
  o.is_weight.weight_type = parse_key("train_infer_correction.is_weight.weight_type",
                                      [&] { return rl::parse_mismatch_granularity(c.is_weight.weight_type); });
  o.is_weight.upper_bound = c.is_weight.upper_bound;
  o.is_weight.detach = c.is_weight.detach;
  for (size_t i = 0; i < c.filters.size(); ++i) {
    const config::TrainInferFilterConfig& f = c.filters[i];
    rl::MismatchFilter m;
    m.enabled = f.enabled;
    m.agg_type = parse_key(fmt::format("train_infer_correction.filters[{}].agg_type", i),
                           [&] { return rl::parse_mismatch_granularity(f.agg_type); });
    m.ratio_enabled = f.ratio_enabled;
    m.ratio_low = f.ratio_low;
    m.ratio_high = f.ratio_high;
    m.diff_enabled = f.diff_enabled;
    m.diff_low = f.diff_low;
    m.diff_high = f.diff_high;
    o.filters.push_back(m);
  }
  return o;
}

}  // namespace roll::workers
