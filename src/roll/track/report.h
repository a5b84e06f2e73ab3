#pragma once
// `roll report RUN_DIR`: an HTML page and PNG charts of a run's metrics.jsonl (docs/tracking.md,
// "roll report"). The page is self-contained: relative image paths, inline CSS, no script.
#include <string>
#include <vector>

#include "roll/track/report_charts.h"
#include "roll/track/run_metrics.h"

namespace roll::track {

struct ReportResult {
  std::string run_dir;
  std::string index_html;             // <run_dir>/report/index.html
  std::vector<std::string> pngs;      // the charts drawn, one per selected chart
};

// The page of one run; `charts` and `rows` from select_charts / summarize over `run`.
std::string report_html(const RunMetrics& run, const std::vector<Chart>& charts, const std::vector<SummaryRow>& rows);

// Writes <run_dir>/report/{index.html, charts.gp, <chart>.png}; roll::Error on a bad metrics
// file or a gnuplot failure.
ReportResult write_run_report(const std::string& run_dir);

// Every run under `root` (find_run_dirs); with more than one, also <root>/report/index.html
// linking each run's page. Returns the runs' results.
std::vector<ReportResult> write_reports(const std::string& root, std::string* root_index = nullptr);

}  // namespace roll::track
