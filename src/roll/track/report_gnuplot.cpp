#include "roll/track/report_gnuplot.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <sstream>

#include "roll/core/error.h"
#include "roll/runtime/child_process.h"

namespace roll::track {
namespace {

// A gnuplot single-quoted string: only ' needs escaping, as ''.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0 && std::filesystem::is_regular_file(candidate)) return candidate;
  }
  return "";
}

}  // namespace

std::string gnuplot_script(const std::vector<Chart>& charts, const RunMetrics& run) {
  std::string s =
      "# Written by `roll report`; redraw with: gnuplot charts.gp (in this folder)\n"
      "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
      "  set terminal pngcairo noenhanced size 900,420 font ',10'\n"
      "} else {\n"
      "  set terminal png noenhanced size 900,420\n"
      "}\n"
      "set grid\nset key outside below\nset xlabel 'step'\nset format y '%g'\nset offsets graph 0.02, graph 0.02, "
      "graph 0.05, graph 0.05\n";
  int block = 0;
  for (const Chart& chart : charts) {
    std::vector<std::string> plots;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (const std::string& name : chart.metrics) {
      const auto& pts = run.series.at(name);
      for (const MetricPoint& p : pts) lo = std::min(lo, p.step), hi = std::max(hi, p.step);
      const std::string var = fmt::format("$d{}", block++);
      s += var + " << EOD\n";
      for (const MetricPoint& p : pts) s += fmt::format("{} {:.17g}\n", p.step, p.value);
      s += "EOD\n";
      // Points show sparse series (validation every eval_steps) and single-step runs.
      plots.push_back(fmt::format("{} using 1:2 with {} title {}", var, pts.size() <= 60 ? "linespoints" : "lines",
                                  quoted(name)));
    }
    // Steps are integers: a short run gets a tic per step, not gnuplot's 0.5 steps.
    s += hi - lo <= 12 ? "set xtics 1\n" : "set xtics autofreq\n";
    s += fmt::format("set output {}\nset title {}\nset ylabel {}\nplot ", quoted(chart.spec->id + ".png"),
                     quoted(chart.spec->title), quoted(chart.spec->ylabel));
    for (size_t i = 0; i < plots.size(); ++i) s += (i ? ", \\\n     " : "") + plots[i];
    s += "\nunset output\n";
  }
  return s;
}

void run_gnuplot(const std::string& script, const std::string& dir, std::chrono::milliseconds timeout) {
  const std::string gnuplot = find_on_path("gnuplot");
  if (gnuplot.empty())
    throw Error("roll report needs gnuplot to draw its charts, and none is on PATH: install Debian's gnuplot-nox "
                "(scripts/setup does)");
  runtime::SpawnOptions o;
  o.name = "gnuplot";
  // Absolute: gnuplot changes into `dir` before it reads the script.
  o.argv = {gnuplot, "-e", "cd " + quoted(std::filesystem::absolute(dir).string()),
            std::filesystem::absolute(script).string()};
  o.env = runtime::current_environment();
  o.forward_output = false;
  // on_exit runs once the output is drained too, so last_lines() is complete for the error.
  auto drained = std::make_shared<std::promise<void>>();
  o.on_exit = [drained](const std::string&) { drained->set_value(); };
  auto child = runtime::ChildProcess::spawn(std::move(o));
  if (drained->get_future().wait_for(timeout) != std::future_status::ready) {
    child->stop();
    throw Error(fmt::format("gnuplot on {} ran longer than {} s", script, timeout.count() / 1000));
  }
  if (child->exit_code() != 0) {
    std::string out;
    for (const std::string& l : child->last_lines()) out += "\n  " + l;
    throw Error(fmt::format("gnuplot {} {}:{}", script, child->exit_description().value_or("failed"), out));
  }
}

}  // namespace roll::track
