#include "roll/track/report_charts.h"

#include <algorithm>
#include <regex>
#include <set>

namespace roll::track {

const std::vector<ChartSpec>& report_chart_specs() {
  // Names as ROLL's pipelines log them (docs/pipelines.md); `tokens/` is the agentic pipeline's prefix,
  // `token/` the RLVR pipeline's.
  static const std::vector<ChartSpec> specs = {
      {"rewards", "Rewards and score", "mean per step",
       {R"(critic/(score|rewards)/mean)", R"(val/score/mean)"}, Better::higher, true},
      {"success", "Success per tag", "success / accuracy",
       {R"((val/)?env/[^/]+/success)", R"(val_correct/[^/]+/mean)", R"(eval/.+)"}, Better::higher, true},
      {"response_length", "Response length", "tokens",
       {R"(tokens?/response_length/mean)", R"((val/)?env/response_length)"}, Better::none, true},
      {"loss", "Loss", "loss",
       {R"([^/]+_train/(val_)?loss)", R"(actor/(pg|total)_loss)", R"(critic/vf_loss)"}, Better::lower, true},
      {"kl", "KL", "KL",
       {R"(([^/]+/)?critic/kl)", R"(actor/approxkl)", R"(actor/kl_loss)"}, Better::none, false},
      {"entropy", "Entropy", "nats per token", {R"(actor/entropy.*)", R"(critic/entropy/mean)"}, Better::none, false},
      {"grad_norm", "Gradient norm", "norm", {R"([^/]+_train/grad_norm)", R"(critic/grad_norm)"}, Better::none, false},
      {"throughput", "Throughput", "tokens/s", {R"(system/tps)"}, Better::none, true},
      {"time_per_phase", "Time per phase", "seconds",
       {R"(time/step_[^/]+)", R"(time/val_step)"}, Better::lower, false},
      {"busy", "Busy share per cluster", "share of the step's wall time", {R"(system/busy/.+)"}, Better::none, false},
      {"memory", "Peak resident memory per cluster", "MiB", {R"(system/peak_rss_mb/.+)"}, Better::none, false},
  };
  return specs;
}

std::vector<Chart> select_charts(const std::vector<std::string>& names) {
  std::vector<Chart> charts;
  for (const ChartSpec& spec : report_chart_specs()) {
    std::vector<std::regex> res;
    for (const std::string& p : spec.patterns) res.emplace_back(p, std::regex::ECMAScript);
    Chart chart{&spec, {}};
    for (const std::string& name : names)
      if (std::any_of(res.begin(), res.end(), [&](const std::regex& re) { return std::regex_match(name, re); }))
        chart.metrics.push_back(name);
    std::sort(chart.metrics.begin(), chart.metrics.end());
    chart.metrics.erase(std::unique(chart.metrics.begin(), chart.metrics.end()), chart.metrics.end());
    if (!chart.metrics.empty()) charts.push_back(std::move(chart));
  }
  return charts;
}

std::vector<SummaryRow> summarize(const std::vector<Chart>& charts, const RunMetrics& run) {
  std::vector<SummaryRow> rows;
  std::set<std::string> seen;
  for (const Chart& chart : charts) {
    if (!chart.spec->headline) continue;
    for (const std::string& name : chart.metrics) {
      auto it = run.series.find(name);
      if (it == run.series.end() || it->second.empty() || !seen.insert(name).second) continue;
      const auto& pts = it->second;
      SummaryRow row{name, pts.front(), pts.back(), std::nullopt, pts.size()};
      if (chart.spec->better != Better::none) {
        const bool higher = chart.spec->better == Better::higher;
        // The first step that reaches the best value.
        row.best = *std::min_element(pts.begin(), pts.end(), [&](const MetricPoint& a, const MetricPoint& b) {
          return higher ? a.value > b.value : a.value < b.value;
        });
      }
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

}  // namespace roll::track
