#include "roll/rl/data_metrics.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "roll/core/error.h"
#include "roll/rl/check.h"
#include "roll/rl/masked.h"

namespace roll::rl {
namespace {

double item(const at::Tensor& t) { return t.detach().to(at::kDouble).item<double>(); }
// torch.std (unbiased); one value has no spread: 0 instead of NaN.
double std_of(const at::Tensor& v) { return v.numel() > 1 ? item(v.to(at::kDouble).std()) : 0.0; }

std::string key(std::string_view prefix, std::string_view name) { return fmt::format("{}/{}", prefix, name); }

void add_mmm(MetricMap& m, std::string_view prefix, std::string_view name, const at::Tensor& v) {
  m.add(key(prefix, fmt::format("{}/mean", name)), item(v.to(at::kDouble).mean()));
  m.add(key(prefix, fmt::format("{}/max", name)), item(v.max()));
  m.add(key(prefix, fmt::format("{}/min", name)), item(v.min()));
}

// mean over the selected tokens plus max/min (and std) of them; nothing when none is selected.
void add_selected(MetricMap& m, std::string_view prefix, std::string_view name, const at::Tensor& x,
                  const at::Tensor& sel, bool with_std) {
  if (!sel.any().item<bool>()) return;
  at::Tensor v = x.masked_select(sel);
  m.add(key(prefix, fmt::format("{}/mean", name)), item(v.to(at::kDouble).mean()));
  m.add(key(prefix, fmt::format("{}/max", name)), item(v.max()));
  m.add(key(prefix, fmt::format("{}/min", name)), item(v.min()));
  if (with_std) m.add(key(prefix, fmt::format("{}/std", name)), std_of(v));
}

at::Tensor final_mask(const DataMetricsInputs& in) {
  return (in.final_response_mask.defined() ? in.final_response_mask : in.response_mask).to(at::kBool);
}

}  // namespace

MetricMap token_metrics(const DataMetricsInputs& in, std::string_view prefix) {
  detail::check_dims(in.response_mask, "response_mask", {-1, -1});
  const int64_t B = in.response_mask.size(0);
  detail::check_dims(in.prompt_mask, "prompt_mask", {B, -1});
  detail::check_dims(in.scores, "scores", {B});
  MetricMap m;
  at::Tensor plen = in.prompt_mask.to(at::kBool).sum(-1).to(at::kDouble);
  at::Tensor rlen = in.response_mask.to(at::kBool).sum(-1).to(at::kDouble);
  at::Tensor tlen = plen + rlen;
  add_mmm(m, prefix, "prompt_length", plen);
  add_mmm(m, prefix, "response_length", rlen);
  m.add(key(prefix, "response_length/diff"), item(rlen.max() - rlen.min()));
  add_mmm(m, prefix, "total_length", tlen);
  m.add(key(prefix, "total_length/diff"), item(tlen.max() - tlen.min()));
  at::Tensor capped = rlen == static_cast<double>(in.max_response_length);
  m.add(key(prefix, "total_response_length/clip"), item(capped.sum()));
  at::Tensor s = in.scores.to(at::kDouble);
  for (auto [name, sel] : {std::pair<std::string_view, at::Tensor>{"right_response_length", s == 1},
                           std::pair<std::string_view, at::Tensor>{"error_response_length", s == 0}}) {
    m.add(key(prefix, fmt::format("{}/clip", name)), item(at::logical_and(sel, capped).sum()));
    at::Tensor below = at::logical_and(sel, at::logical_not(capped));
    if (below.any().item<bool>()) add_mmm(m, prefix, name, rlen.masked_select(below));
  }
  return m;
}

MetricMap value_metrics(const DataMetricsInputs& in, std::string_view prefix) {
  detail::check_dims(in.advantages, "advantages", {-1, -1});
  const int64_t B = in.advantages.size(0);
  detail::check_dims(in.scores, "scores", {B});
  detail::check_same_shape(in.token_level_rewards, "token_level_rewards", in.advantages, "advantages");
  detail::check_same_shape(in.returns, "returns", in.advantages, "advantages");
  at::Tensor fm = final_mask(in);
  detail::check_same_shape(fm, "final_response_mask", in.advantages, "advantages");
  at::Tensor raw = in.raw_advantages.defined() ? in.raw_advantages : in.advantages;
  detail::check_same_shape(raw, "raw_advantages", in.advantages, "advantages");
  MetricMap m;
  at::Tensor s = in.scores.to(at::kDouble);
  at::Tensor correct = s == 1, incorrect = s == 0;
  m.add(key(prefix, "entropy/mean"), in.entropy.value_or(0.0));
  m.add(key(prefix, "correct/mean"), item(correct.to(at::kDouble).mean()));
  m.add(key(prefix, "score_distribution/max_value"), 1.0);
  m.add(key(prefix, "score_distribution/min_value"), 0.0);
  m.add(key(prefix, "score_distribution/correct_samples_ratio"), item(correct.to(at::kDouble).mean()));
  m.add(key(prefix, "score_distribution/incorrect_samples_ratio"), item(incorrect.to(at::kDouble).mean()));
  add_mmm(m, prefix, "score", s);
  add_mmm(m, prefix, "rewards", in.token_level_rewards.to(at::kDouble).sum(-1));
  add_mmm(m, prefix, "token_level_rewards_mean", in.token_level_rewards.to(at::kDouble).mean(-1));
  at::Tensor right = at::logical_and(fm, correct.unsqueeze(-1));
  at::Tensor error = at::logical_and(fm, incorrect.unsqueeze(-1));
  m.add(key(prefix, "advantages/mean"), item(masked_mean(in.advantages.to(at::kDouble), fm)));
  add_selected(m, prefix, "advantages", in.advantages, fm, false);
  add_selected(m, prefix, "right_response/advantages", in.advantages, right, true);
  add_selected(m, prefix, "error_response/advantages", in.advantages, error, true);
  m.add(key(prefix, "raw_advantages/mean"), item(masked_mean(raw.to(at::kDouble), fm)));
  add_selected(m, prefix, "raw_advantages", raw, fm, false);
  add_selected(m, prefix, "right_response/raw_advantages", raw, right, true);
  add_selected(m, prefix, "error_response/raw_advantages", raw, error, true);
  m.add(key(prefix, "returns/mean"), item(masked_mean(in.returns.to(at::kDouble), fm)));
  add_selected(m, prefix, "returns", in.returns, fm, false);
  if (in.values.defined()) {
    detail::check_same_shape(in.values, "values", in.advantages, "advantages");
    m.add(key(prefix, "values/mean"), item(masked_mean(in.values.to(at::kDouble), fm)));
    add_selected(m, prefix, "values", in.values, fm, false);
  }
  return m;
}

MetricMap group_metrics(const DataMetricsInputs& in, int64_t n, std::string_view prefix) {
  MetricMap m;
  if (n <= 1) return m;
  detail::check_dims(in.response_mask, "response_mask", {-1, -1});
  const int64_t B = in.response_mask.size(0);
  detail::check_dims(in.scores, "scores", {B});
  if (B % n != 0)
    throw Error(fmt::format("group metrics: {} samples are not a multiple of num_return_sequences = {}", B, n));
  const int64_t G = B / n;
  at::Tensor len = in.response_mask.to(at::kBool).sum(-1).to(at::kDouble).reshape({G, n});
  at::Tensor len_diff = std::get<0>(len.max(1)) - std::get<0>(len.min(1));
  add_mmm(m, prefix, "response_length_diff", len_diff);
  at::Tensor s = in.scores.to(at::kDouble).reshape({G, n});
  at::Tensor correct = s == 1, incorrect = s == 0;
  at::Tensor ratio = correct.to(at::kDouble).mean(1);
  m.add(key(prefix, "correct_ratio/mean"), item(ratio.mean()));
  m.add(key(prefix, "correct_ratio/std"), std_of(ratio));
  double all_c = item(correct.all(1).sum()), all_i = item(incorrect.all(1).sum());
  m.add(key(prefix, "all_correct_groups_ratio"), all_c / G);
  m.add(key(prefix, "all_incorrect_groups_ratio"), all_i / G);
  m.add(key(prefix, "mixed_groups_ratio"), (G - all_c - all_i) / G);
  if (in.advantages.defined()) {
    detail::check_same_shape(in.advantages, "advantages", in.response_mask, "response_mask");
    at::Tensor adv = masked_mean_rows(in.advantages.to(at::kDouble), in.response_mask).reshape({G, n});
    add_mmm(m, prefix, "advantage_diff", std::get<0>(adv.max(1)) - std::get<0>(adv.min(1)));
    // Groups with both a correct and an incorrect sample: mean advantage of each side, then the gap.
    at::Tensor cf = correct.to(at::kDouble), inf = incorrect.to(at::kDouble);
    at::Tensor nc = cf.sum(1), ni = inf.sum(1);
    at::Tensor both = at::logical_and(nc > 0, ni > 0);
    if (both.any().item<bool>()) {
      at::Tensor gap = (adv * cf).sum(1) / nc.clamp_min(1) - (adv * inf).sum(1) / ni.clamp_min(1);
      at::Tensor v = gap.masked_select(both);
      m.add(key(prefix, "correct_vs_incorrect_advantage_diff/mean"), item(v.mean()));
      m.add(key(prefix, "correct_vs_incorrect_advantage_diff/std"), std_of(v));
    }
  }
  return m;
}

MetricMap mask_metrics(const at::Tensor& response_mask, const at::Tensor& final_response_mask,
                       std::string_view prefix) {
  detail::check_dims(response_mask, "response_mask", {-1, -1});
  at::Tensor m = response_mask.to(at::kBool);
  at::Tensor fm = (final_response_mask.defined() ? final_response_mask : response_mask).to(at::kBool);
  detail::check_same_shape(fm, "final_response_mask", m, "response_mask");
  at::Tensor valid = fm.any(1).to(at::kDouble);
  MetricMap out;
  out.add(key(prefix, "samples_used"), item(valid.sum()));
  out.add(key(prefix, "samples_total"), static_cast<double>(valid.numel()));
  out.add(key(prefix, "final_mask_ratio"), item(valid.mean()));
  double tokens = item(m.sum());
  if (tokens > 0) out.add(key(prefix, "token_keep_ratio"), item(fm.sum()) / (tokens + 1e-8));
  return out;
}

}  // namespace roll::rl
