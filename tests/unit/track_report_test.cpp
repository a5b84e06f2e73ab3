// `roll report` without gnuplot: reading metrics.jsonl (errors name file and line), picking charts by
// metric-name patterns, the summary rows, the gnuplot script and the HTML page. tests/cli/report_cli.sh
// runs gnuplot and headless Chromium on a real report.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "roll/core/error.h"
#include "roll/track/report.h"
#include "roll/track/report_charts.h"
#include "roll/track/report_gnuplot.h"
#include "roll/track/run_metrics.h"

namespace fs = std::filesystem;
namespace track = roll::track;

namespace {

track::RunMetrics parse(const std::string& text) {
  std::istringstream in(text);
  return track::parse_metrics_jsonl(in, "m.jsonl");
}

// The roll::Error message `f` raises ("" when it returns).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const roll::Error& e) {
    return e.what();
  }
  return "";
}

std::string parse_error(const std::string& text) {
  return error_of([&] { parse(text); });
}

std::vector<std::pair<int64_t, double>> points(const track::RunMetrics& run, const std::string& name) {
  std::vector<std::pair<int64_t, double>> out;
  for (const auto& p : run.series.at(name)) out.emplace_back(p.step, p.value);
  return out;
}

// chart id -> its metrics.
std::map<std::string, std::vector<std::string>> chart_map(const std::vector<std::string>& names) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& c : track::select_charts(names)) out[c.spec->id] = c.metrics;
  return out;
}

struct ScratchDir {
  fs::path path;
  ScratchDir() {
    std::string tmpl = (fs::temp_directory_path() / "roll_report_XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~ScratchDir() { fs::remove_all(path); }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((path / rel).parent_path());
    std::ofstream(path / rel) << text;
  }
};

}  // namespace

TEST(TrackReportParse, NumbersBoolsNullsAndText) {
  auto run = parse(
      "{\"step\":0,\"metrics\":{\"a\":1.5,\"ok\":true,\"gone\":null,\"note\":\"hi\"}}\n"
      "\n"
      "{\"step\":1,\"metrics\":{\"a\":-2,\"ok\":false,\"gone\":3}}\n");
  EXPECT_EQ(run.steps, 2);
  EXPECT_EQ(run.skipped_truncated, 0);
  EXPECT_EQ(points(run, "a"), (std::vector<std::pair<int64_t, double>>{{0, 1.5}, {1, -2.0}}));
  EXPECT_EQ(points(run, "ok"), (std::vector<std::pair<int64_t, double>>{{0, 1.0}, {1, 0.0}}));
  EXPECT_EQ(points(run, "gone"), (std::vector<std::pair<int64_t, double>>{{1, 3.0}}));  // null: no point
  EXPECT_EQ(run.series.count("note"), 0u);  // text is not a series
}

TEST(TrackReportParse, StepsSortedAndARepeatedStepTakesTheLaterLine) {
  auto run = parse(
      "{\"step\":2,\"metrics\":{\"a\":20}}\n"
      "{\"step\":0,\"metrics\":{\"a\":0}}\n"
      "{\"step\":2,\"metrics\":{\"a\":21}}\n");
  EXPECT_EQ(points(run, "a"), (std::vector<std::pair<int64_t, double>>{{0, 0.0}, {2, 21.0}}));
}

TEST(TrackReportParse, MalformedLinesNameFileAndLine) {
  const std::string good = "{\"step\":0,\"metrics\":{\"a\":1}}\n";
  EXPECT_NE(parse_error(good + "{\"step\":1,\"metr\n" + good).find("m.jsonl:2: not JSON"), std::string::npos);
  EXPECT_NE(parse_error(good + good + "{\"metrics\":{}}\n").find("m.jsonl:3: no integer \"step\""), std::string::npos);
  EXPECT_NE(parse_error("{\"step\":1.5,\"metrics\":{}}\n").find("m.jsonl:1: no integer \"step\""), std::string::npos);
  EXPECT_NE(parse_error("{\"step\":1,\"metrics\":[1]}\n").find("m.jsonl:1: no \"metrics\" object"), std::string::npos);
  EXPECT_NE(parse_error("[1,2]\n").find("m.jsonl:1: expected an object"), std::string::npos);
  EXPECT_NE(parse_error(good + "{\"step\":1,\"metrics\":{\"x\":[1]}}\n").find("m.jsonl:2: metric 'x' is a array"),
            std::string::npos);
  EXPECT_EQ(parse_error(good + good), "");
}

TEST(TrackReportParse, AnUnfinishedLastLineIsSkippedAndCounted) {
  auto run = parse("{\"step\":0,\"metrics\":{\"a\":1}}\n{\"step\":1,\"metrics\":{\"a\":");
  EXPECT_EQ(run.steps, 1);
  EXPECT_EQ(run.skipped_truncated, 1);
  EXPECT_EQ(points(run, "a").size(), 1u);
  // The same text with a newline after it is a finished, malformed line: an error.
  EXPECT_NE(parse_error("{\"step\":0,\"metrics\":{\"a\":1}}\n{\"step\":1,\"metrics\":{\"a\":\n").find("m.jsonl:2"),
            std::string::npos);
}

TEST(TrackReportCharts, PicksTheDemoPipelinesMetrics) {
  // Names the agentic and RLVR pipelines log (output/demo of scripts/demo), plus others that match nothing.
  const std::vector<std::string> names = {
      "critic/score/mean", "critic/rewards/mean", "critic/score/max", "val/score/mean",
      "env/FrozenLake/success", "val/env/FrozenLake/success", "val_correct/arithmetic/mean", "val_correct/all/mean",
      "tokens/response_length/mean", "token/response_length/mean", "tokens/response_length/max",
      "env/response_length", "critic/kl", "math_rule/critic/kl", "actor/approxkl", "actor/kl_loss",
      "critic/kl_coef", "critic/entropy/mean", "actor_train/grad_norm", "system/tps", "time/step_total",
      "time/step_rollout", "time/step_train", "time/val_step", "time/actor_train/model_update/total",
      "actor/pg_loss", "system/step"};
  const auto charts = chart_map(names);
  using V = std::vector<std::string>;
  EXPECT_EQ(charts.at("rewards"), (V{"critic/rewards/mean", "critic/score/mean", "val/score/mean"}));
  EXPECT_EQ(charts.at("success"), (V{"env/FrozenLake/success", "val/env/FrozenLake/success", "val_correct/all/mean",
                                     "val_correct/arithmetic/mean"}));
  EXPECT_EQ(charts.at("response_length"),
            (V{"env/response_length", "token/response_length/mean", "tokens/response_length/mean"}));
  EXPECT_EQ(charts.at("loss"), (V{"actor/pg_loss"}));
  EXPECT_EQ(charts.at("kl"), (V{"actor/approxkl", "actor/kl_loss", "critic/kl", "math_rule/critic/kl"}));
  EXPECT_EQ(charts.at("entropy"), (V{"critic/entropy/mean"}));
  EXPECT_EQ(charts.at("grad_norm"), (V{"actor_train/grad_norm"}));
  EXPECT_EQ(charts.at("throughput"), (V{"system/tps"}));
  EXPECT_EQ(charts.at("time_per_phase"), (V{"time/step_rollout", "time/step_total", "time/step_train", "time/val_step"}));
  EXPECT_EQ(charts.size(), 9u);
  // In report_chart_specs() order.
  const auto ordered = track::select_charts(names);
  ASSERT_EQ(ordered.size(), 9u);
  EXPECT_EQ(ordered.front().spec->id, "rewards");
  EXPECT_EQ(ordered.back().spec->id, "time_per_phase");
}

TEST(TrackReportCharts, NewNamesLandOnTheirChartAndAbsentChartsAreLeftOut) {
  const auto charts = chart_map({"val/env/Sokoban/success", "eval/FrozenLake/success", "eval/arithmetic/accuracy",
                                 "actor/entropy_loss", "critic_train/grad_norm", "time/step_reward",
                                 "sft_train/loss", "sft_train/val_loss", "system/busy/actor_train",
                                 "system/busy/actor_infer"});
  using V = std::vector<std::string>;
  EXPECT_EQ(charts.at("success"), (V{"eval/FrozenLake/success", "eval/arithmetic/accuracy", "val/env/Sokoban/success"}));
  EXPECT_EQ(charts.at("entropy"), (V{"actor/entropy_loss"}));
  EXPECT_EQ(charts.at("grad_norm"), (V{"critic_train/grad_norm"}));
  EXPECT_EQ(charts.at("time_per_phase"), (V{"time/step_reward"}));
  EXPECT_EQ(charts.at("loss"), (V{"sft_train/loss", "sft_train/val_loss"}));
  EXPECT_EQ(charts.at("busy"), (V{"system/busy/actor_infer", "system/busy/actor_train"}));
  EXPECT_EQ(charts.size(), 6u);
  EXPECT_TRUE(track::select_charts({"actor/clipfrac", "env/FrozenLake/success_rate"}).empty());
  EXPECT_TRUE(track::select_charts({}).empty());
}

TEST(TrackReportSummary, FirstLastAndBestOfTheHeadlineMetrics) {
  auto run = parse(
      "{\"step\":0,\"metrics\":{\"critic/score/mean\":0.1,\"system/tps\":50,\"critic/kl\":0.0}}\n"
      "{\"step\":1,\"metrics\":{\"critic/score/mean\":0.7,\"system/tps\":40,\"val/env/FrozenLake/success\":0.2}}\n"
      "{\"step\":2,\"metrics\":{\"critic/score/mean\":0.7,\"system/tps\":45}}\n"
      "{\"step\":3,\"metrics\":{\"critic/score/mean\":0.5,\"system/tps\":60,\"val/env/FrozenLake/success\":0.6}}\n");
  std::vector<std::string> names;
  for (const auto& [n, p] : run.series) names.push_back(n);
  const auto rows = track::summarize(track::select_charts(names), run);
  ASSERT_EQ(rows.size(), 3u);  // critic/kl: not a headline chart
  EXPECT_EQ(rows[0].metric, "critic/score/mean");
  EXPECT_EQ(rows[0].first.step, 0);
  EXPECT_DOUBLE_EQ(rows[0].first.value, 0.1);
  EXPECT_EQ(rows[0].last.step, 3);
  EXPECT_DOUBLE_EQ(rows[0].last.value, 0.5);
  ASSERT_TRUE(rows[0].best);
  EXPECT_EQ(rows[0].best->step, 1);  // the first step reaching the maximum
  EXPECT_DOUBLE_EQ(rows[0].best->value, 0.7);
  EXPECT_EQ(rows[0].points, 4u);
  EXPECT_EQ(rows[1].metric, "val/env/FrozenLake/success");
  EXPECT_EQ(rows[1].best->step, 3);
  EXPECT_EQ(rows[1].points, 2u);
  EXPECT_EQ(rows[2].metric, "system/tps");
  EXPECT_FALSE(rows[2].best);  // throughput: no "best"
}

TEST(TrackReportGnuplot, ScriptHoldsTheDataAndOneOutputPerChart) {
  auto run = parse(
      "{\"step\":0,\"metrics\":{\"critic/score/mean\":0.25,\"system/tps\":12.5}}\n"
      "{\"step\":4,\"metrics\":{\"critic/score/mean\":0.5}}\n");
  const auto charts = track::select_charts({"critic/score/mean", "system/tps"});
  const std::string s = track::gnuplot_script(charts, run);
  EXPECT_NE(s.find("$d0 << EOD\n0 0.25\n4 0.5\nEOD\n"), std::string::npos) << s;
  EXPECT_NE(s.find("$d1 << EOD\n0 12.5\nEOD\n"), std::string::npos) << s;
  EXPECT_NE(s.find("set output 'rewards.png'"), std::string::npos);
  EXPECT_NE(s.find("set output 'throughput.png'"), std::string::npos);
  EXPECT_NE(s.find("plot $d0 using 1:2 with linespoints title 'critic/score/mean'"), std::string::npos) << s;
  EXPECT_NE(s.find("pngcairo"), std::string::npos);
  EXPECT_NE(s.find("set terminal png "), std::string::npos);  // the fallback without cairo
  EXPECT_NE(s.find("noenhanced"), std::string::npos);         // '_' in names stays literal

  // A quote in a metric name is doubled inside gnuplot's single-quoted title.
  auto odd = parse("{\"step\":0,\"metrics\":{\"eval/it's/x\":1}}\n");
  EXPECT_NE(track::gnuplot_script(track::select_charts({"eval/it's/x"}), odd).find("title 'eval/it''s/x'"),
            std::string::npos);
}

TEST(TrackReportHtml, SelfContainedPageWithTablesAndRelativeImages) {
  auto run = parse(
      "{\"step\":0,\"metrics\":{\"critic/score/mean\":0.25,\"system/tps\":12.5}}\n"
      "{\"step\":1,\"metrics\":{\"critic/score/mean\":0.5}}\n");
  run.dir = "/runs/exp/20261201-094541";
  run.hparams = {{"exp_name", "demo<1>"}, {"seed", 42}, {"note", "a & b"}};
  const auto charts = track::select_charts({"critic/score/mean", "system/tps"});
  const std::string html = track::report_html(run, charts, track::summarize(charts, run));
  EXPECT_NE(html.find("<img src=\"rewards.png\""), std::string::npos);
  EXPECT_NE(html.find("<img src=\"throughput.png\""), std::string::npos);
  EXPECT_EQ(html.find("kl.png"), std::string::npos);             // absent charts draw nothing ...
  EXPECT_NE(html.find("Not in this run (no matching metric): Success per tag"), std::string::npos);  // ... and are named
  EXPECT_NE(html.find("demo&lt;1&gt; &mdash; 20261201-094541"), std::string::npos);  // escaped exp_name
  EXPECT_NE(html.find("<td>a &amp; b</td>"), std::string::npos);
  EXPECT_NE(html.find("<td><code>seed</code></td><td>42</td>"), std::string::npos);
  EXPECT_NE(html.find("<td><code>critic/score/mean</code></td><td class=\"num\">0.25 <small>(step 0)</small>"),
            std::string::npos);
  EXPECT_NE(html.find("3 entries"), std::string::npos);
  // Self-contained: no script, no external resource.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
}

TEST(TrackReportRuns, FindsRunFoldersAndReadsThem) {
  ScratchDir d;
  const std::string line = "{\"step\":0,\"metrics\":{\"system/tps\":1}}\n";
  d.write("exp/b/20261201-000002/metrics.jsonl", line);
  d.write("exp/a/20261201-000001/metrics.jsonl", line);
  d.write("exp/a/20261201-000001/hparams.json", "{\"exp_name\": \"a\"}");
  const auto runs = track::find_run_dirs(d.path.string());
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(fs::path(runs[0]).filename(), "20261201-000001");
  EXPECT_EQ(fs::path(runs[1]).filename(), "20261201-000002");
  EXPECT_EQ(track::find_run_dirs(runs[1]), std::vector<std::string>{runs[1]});  // a run folder itself

  const auto a = track::read_run_metrics(runs[0]);
  EXPECT_EQ(a.hparams.value("exp_name", ""), "a");
  EXPECT_EQ(a.dir, runs[0]);
  EXPECT_TRUE(track::read_run_metrics(runs[1]).hparams.empty());  // hparams.json is optional

  d.write("empty/metrics.jsonl", "");
  EXPECT_THROW(track::read_run_metrics((d.path / "empty").string()), roll::Error);
  d.write("badh/metrics.jsonl", line);
  d.write("badh/hparams.json", "{oops");
  EXPECT_NE(error_of([&] { track::read_run_metrics((d.path / "badh").string()); }).find("hparams.json: not JSON"),
            std::string::npos);
  d.write("none/x.txt", "");
  EXPECT_NE(error_of([&] { track::find_run_dirs((d.path / "none").string()); }).find("no metrics.jsonl under"),
            std::string::npos);
}
