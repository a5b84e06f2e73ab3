#include "roll/track/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "roll/core/error.h"
#include "roll/core/html_escape.h"
#include "roll/track/report_gnuplot.h"

namespace roll::track {
namespace fs = std::filesystem;

namespace {

std::string number(double v) { return fmt::format("{:.4g}", v); }

std::string point(const MetricPoint& p) { return fmt::format("{} <small>(step {})</small>", number(p.value), p.step); }

std::string hparam_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

constexpr const char* kStyle = R"(body{font-family:sans-serif;margin:2em auto;max-width:960px;color:#222}
table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums}
img{max-width:100%;border:1px solid #ddd}.muted{color:#777;font-size:90%}code{font-size:90%})";

std::string page(const std::string& title, const std::string& body) {
  return fmt::format("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n"
                     "<style>\n{}\n</style>\n</head>\n<body>\n{}</body>\n</html>\n",
                     html_escape(title), kStyle, body);
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) throw Error(fmt::format("cannot write {}", path.string()));
}

}  // namespace

std::string report_html(const RunMetrics& run, const std::vector<Chart>& charts, const std::vector<SummaryRow>& rows) {
  const std::string name = fs::path(run.dir).filename().string();
  const std::string exp = run.hparams.contains("exp_name") ? hparam_text(run.hparams["exp_name"]) : "";
  int64_t first = 0, last = 0;
  bool any = false;
  for (const auto& [metric, pts] : run.series)
    for (const MetricPoint& p : pts) {
      first = any ? std::min(first, p.step) : p.step;
      last = any ? std::max(last, p.step) : p.step;
      any = true;
    }
  std::string b = fmt::format("<h1>{}{}</h1>\n<p class=\"muted\">run <code>{}</code>: {} logged steps (steps {} to {}), "
                              "{} metrics{}</p>\n",
                              exp.empty() ? "" : html_escape(exp) + " &mdash; ", html_escape(name), html_escape(run.dir), run.steps,
                              first, last, run.series.size(),
                              run.skipped_truncated ? "; an unfinished last line was skipped" : "");

  b += "<h2>Summary</h2>\n";
  if (rows.empty()) {
    b += "<p class=\"muted\">No headline metric (rewards, success, response length, loss, throughput) in this run.</p>\n";
  } else {
    b += "<table>\n<tr><th>metric</th><th>first</th><th>last</th><th>best</th><th>points</th></tr>\n";
    for (const SummaryRow& r : rows)
      b += fmt::format("<tr><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                       "<td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                       html_escape(r.metric), point(r.first), point(r.last), r.best ? point(*r.best) : "&ndash;", r.points);
    b += "</table>\n";
  }

  b += "<h2>Charts</h2>\n";
  std::vector<std::string> absent;
  for (const ChartSpec& spec : report_chart_specs()) {
    auto it = std::find_if(charts.begin(), charts.end(), [&](const Chart& c) { return c.spec == &spec; });
    if (it == charts.end()) {
      absent.push_back(html_escape(spec.title));
      continue;
    }
    std::string names;
    for (const std::string& m : it->metrics) names += (names.empty() ? "" : ", ") + ("<code>" + html_escape(m) + "</code>");
    b += fmt::format("<h3>{}</h3>\n<img src=\"{}.png\" alt=\"{}\" width=\"900\" height=\"420\">\n<p class=\"muted\">{}</p>\n",
                     html_escape(spec.title), html_escape(spec.id), html_escape(spec.title), names);
  }
  if (!absent.empty()) {
    std::string list;
    for (const std::string& a : absent) list += (list.empty() ? "" : ", ") + a;
    b += fmt::format("<p class=\"muted\">Not in this run (no matching metric): {}.</p>\n", list);
  }

  b += "<h2>Hyperparameters</h2>\n";
  if (run.hparams.empty()) {
    b += "<p class=\"muted\">No hparams.json in the run folder.</p>\n";
  } else {
    b += fmt::format("<details>\n<summary>{} entries (the resolved config, flattened)</summary>\n<table>\n"
                     "<tr><th>name</th><th>value</th></tr>\n",
                     run.hparams.size());
    for (const auto& [k, v] : run.hparams.items())
      b += fmt::format("<tr><td><code>{}</code></td><td>{}</td></tr>\n", html_escape(k), html_escape(hparam_text(v)));
    b += "</table>\n</details>\n";
  }
  b += "<p class=\"muted\">Written by <code>roll report</code>; charts.gp redraws the charts with gnuplot.</p>\n";
  return page("roll report: " + (exp.empty() ? name : exp + " " + name), b);
}

ReportResult write_run_report(const std::string& run_dir) {
  const RunMetrics run = read_run_metrics(run_dir);
  std::vector<std::string> names;
  for (const auto& [name, pts] : run.series) names.push_back(name);
  const std::vector<Chart> charts = select_charts(names);
  const fs::path out = fs::path(run_dir) / "report";
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw Error(fmt::format("cannot create {}: {}", out.string(), ec.message()));
  ReportResult result{run_dir, (out / "index.html").string(), {}};
  for (const Chart& c : charts) {
    const fs::path png = out / (c.spec->id + ".png");
    fs::remove(png, ec);  // a chart gnuplot fails to draw must not leave an old image behind
    result.pngs.push_back(png.string());
  }
  if (!charts.empty()) {
    const fs::path script = out / "charts.gp";
    write_file(script, gnuplot_script(charts, run));
    run_gnuplot(script.string(), out.string());
    for (const std::string& png : result.pngs)
      if (!fs::exists(png)) throw Error(fmt::format("gnuplot wrote no {} (script {})", png, script.string()));
  }
  write_file(result.index_html, report_html(run, charts, summarize(charts, run)));
  return result;
}

std::vector<ReportResult> write_reports(const std::string& root, std::string* root_index) {
  std::vector<ReportResult> results;
  for (const std::string& dir : find_run_dirs(root)) results.push_back(write_run_report(dir));
  if (results.size() > 1) {
    std::string b = fmt::format("<h1>Runs under {}</h1>\n<ul>\n", html_escape(root));
    for (const ReportResult& r : results) {
      const std::string rel = fs::relative(r.index_html, fs::path(root) / "report").generic_string();
      b += fmt::format("<li><a href=\"{}\">{}</a></li>\n", html_escape(rel),
                       html_escape(fs::relative(r.run_dir, root).generic_string()));
    }
    b += "</ul>\n";
    const fs::path out = fs::path(root) / "report";
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) throw Error(fmt::format("cannot create {}: {}", out.string(), ec.message()));
    write_file(out / "index.html", page("roll report: " + root, b));
    if (root_index) *root_index = (out / "index.html").string();
  }
  return results;
}

}  // namespace roll::track
