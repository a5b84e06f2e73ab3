#pragma once
// Which charts `roll report` draws: each chart is picked by metric-name patterns, so a metric
// that a new pipeline logs under a known name (val/env/<tag>/success, actor/entropy_*) lands on
// its chart without a code change, and a chart none of whose metrics the run has is left out.
#include <optional>
#include <string>
#include <vector>

#include "roll/track/run_metrics.h"

namespace roll::track {

enum class Better { none, higher, lower };

struct ChartSpec {
  std::string id;     // file stem of the PNG: <id>.png
  std::string title;
  std::string ylabel;
  std::vector<std::string> patterns;  // ECMAScript regexes matched against the whole metric name
  Better better = Better::none;        // what "best" means in the summary table
  bool headline = false;              // its metrics get summary rows
};

// rewards, success, response length, loss, KL, entropy, grad norm, throughput, time per phase.
const std::vector<ChartSpec>& report_chart_specs();

struct Chart {
  const ChartSpec* spec;
  std::vector<std::string> metrics;  // sorted
};

// The charts that have at least one of `names`, in report_chart_specs() order.
std::vector<Chart> select_charts(const std::vector<std::string>& names);

struct SummaryRow {
  std::string metric;
  MetricPoint first, last;
  std::optional<MetricPoint> best;  // absent when the chart has no better direction
  size_t points = 0;
};

// First, last and best point of every metric of the headline charts (a metric on two headline
// charts once). `charts` come from select_charts over `run`'s series.
std::vector<SummaryRow> summarize(const std::vector<Chart>& charts, const RunMetrics& run);

}  // namespace roll::track
