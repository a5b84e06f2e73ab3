#include "roll/pipeline/step_advantages.h"

#include <ATen/ATen.h>

#include "roll/rl/advantage.h"
#include "roll/rl/estimator.h"
#include "roll/rl/masks.h"
#include "roll/rl/overlong.h"

namespace roll::pipeline {
namespace {

rl::NormType norm_of(const std::optional<std::string>& name) {
  return name ? rl::parse_norm_type(*name) : rl::NormType::none;
}

at::Tensor float_mask(const Batch& b) { return b.tensor("response_mask").slice(1, 1).to(at::kFloat); }

}  // namespace

rl::MetricMap compute_domain_advantages(Batch& d, const config::PipelineConfig& c, const std::string& domain,
                                        rl::RunningMomentsMap& running, rl::KlController& kl) {
  const int64_t n = std::max<int64_t>(1, c.num_return_sequences_in_group);
  const at::Tensor m = float_mask(d);
  const at::Tensor scores = d.tensor("scores").to(at::kFloat);
  rl::MetricMap out;

  rl::SampleMaskParams sp;
  sp.max_len_mask = c.max_len_mask;
  sp.difficulty_mask = c.difficulty_mask;
  sp.difficulty_low_threshold = c.difficulty_low_threshold;
  sp.difficulty_high_threshold = c.difficulty_high_threshold;
  sp.error_max_len_clip = c.error_max_len_clip;
  sp.error_max_len_threshold = c.error_max_len_threshold;
  sp.num_return_sequences = n;
  rl::SampleMaskResult mask = rl::sample_level_mask(m, d.tensor("responses").size(1), scores, sp);
  out.merge(mask.metrics);

  // What gets normalised is the reward worker's response-level reward (the score itself, or the
  // score plus the rule rewards' shaping); DAPO overlong shaping joins it before normalisation.
  // The masks above and the critic/score metrics see the verifier's score.
  at::Tensor shaped_scores =
      d.has_tensor("response_level_rewards") ? d.tensor("response_level_rewards").to(at::kFloat) : scores;
  if (c.overlong_reward.enable) {
    const rl::OverlongParams op{true, c.overlong_reward.buffer_len, c.overlong_reward.penalty_factor};
    rl::OverlongResult ol = rl::apply_overlong_penalty(shaped_scores, m.sum(1), d.tensor("responses").size(1), op);
    shaped_scores = ol.rewards;
    out.merge(ol.metrics);
  }

  rl::RewardPostprocessParams rp;
  rp.adv_estimator = rl::parse_adv_estimator(c.adv_estimator);
  rp.norm_mean_type = norm_of(c.norm_mean_type);
  rp.norm_std_type = norm_of(c.norm_std_type);
  rp.num_return_sequences = n;
  rp.reward_clip = c.reward_clip;
  rl::RewardPostprocessResult post = rl::reward_postprocess(shaped_scores, rp, running, domain);
  out.merge(post.metrics);

  out.merge(token_rewards_and_advantages(d, post.rewards, mask.final_response_mask, c, kl));
  d.set_tensor("final_response_mask", mask.final_response_mask);
  d.set_tensor("response_level_rewards", post.rewards);
  return out;
}

rl::MetricMap token_rewards_and_advantages(Batch& b, const at::Tensor& response_level_rewards,
                                           const at::Tensor& advantage_mask, const config::PipelineConfig& c,
                                           rl::KlController& kl) {
  rl::MetricMap out;
  rl::TokenRewardInputs ti;
  ti.response_level_rewards = response_level_rewards;
  ti.attention_mask = b.tensor("attention_mask");
  ti.position_ids = b.tensor("position_ids");
  ti.response_mask = float_mask(b);
  ti.old_log_probs = b.tensor("old_log_probs");
  if (c.enable_reference) ti.ref_log_probs = b.tensor("ref_log_probs");
  rl::TokenRewardParams tp;
  tp.kl_penalty = rl::parse_kl_type(c.kl_penalty);
  tp.add_token_level_kl = c.add_token_level_kl;
  tp.reward_clip = c.reward_clip;
  rl::TokenRewardResult tok = rl::compute_token_reward(ti, tp, kl);
  out.merge(tok.metrics);

  rl::AdvantageParams ap;
  ap.estimator = rl::parse_adv_estimator(c.adv_estimator);
  ap.gamma = c.gamma;
  ap.lambd = c.lambd;
  ap.whiten_rewards = c.whiten_rewards;
  ap.whiten_advantages = c.whiten_advantages;
  ap.advantage_clip = c.advantage_clip;
  rl::AdvantageInputs ai;
  ai.token_level_rewards = tok.token_level_rewards;
  ai.mask = advantage_mask;
  if (b.has_tensor("values")) ai.values = b.tensor("values");
  if (b.has_tensor("opd_penalty")) {  // on-policy distillation (docs/opd.md)
    ai.opd_penalty = b.tensor("opd_penalty");
    ai.pure_opd = c.is_pure_opd;
  }
  rl::AdvantageResult adv = rl::compute_advantage(ai, ap);
  out.merge(adv.metrics);
  b.set_tensor("token_level_rewards", adv.token_level_rewards);
  b.set_tensor("advantages", adv.advantages);
  b.set_tensor("raw_advantages", adv.raw_advantages);
  b.set_tensor("returns", adv.returns);
  return out;
}

}  // namespace roll::pipeline
