// Trackers (docs/tracking.md): @tag stripping, the stdout line, metrics.jsonl, the factory's names and
// errors, the log-directory rule, and TensorBoard event files read back by an independent reader
// (tests/oracles/read_tfevents.py: Debian's python3-protobuf with classes protoc generates from
// tests/oracles/tfevent.proto, its own bitwise CRC-32C). Missing protoc or python3-protobuf is a
// failure: scripts/setup installs both.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "roll/config/node.h"
#include "roll/config/reader.h"
#include "roll/config/tracker_names.h"
#include "roll/core/error.h"
#include "roll/track/crc32c.h"
#include "roll/track/hparams.h"
#include "roll/track/tensorboard_tracker.h"
#include "roll/track/text_trackers.h"
#include "roll/track/tracker.h"

using nlohmann::json;
namespace fs = std::filesystem;
namespace track = roll::track;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "roll_track_XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Records what reaches write_metrics/write_hparams, to see what the base class hands on.
class RecordingTracker : public track::Tracker {
 public:
  std::vector<std::pair<int64_t, json>> steps;
  json hparams;

 protected:
  void write_metrics(int64_t step, const json& m) override { steps.emplace_back(step, m); }
  void write_hparams(const json& h) override { hparams = h; }
};

// The oracle's reading of an event file; fails the test when the tools are missing.
json read_events(const std::string& event_file) {
  const std::string oracles = std::string(ROLL_SOURCE_DIR) + "/tests/oracles";
  if (std::system("command -v protoc >/dev/null 2>&1") != 0) {
    ADD_FAILURE() << "protoc not found: install Debian's protobuf-compiler (scripts/setup does)";
    return nullptr;
  }
  if (std::system("/usr/bin/python3 -c 'import google.protobuf' >/dev/null 2>&1") != 0) {
    ADD_FAILURE() << "/usr/bin/python3 cannot import google.protobuf: install python3-protobuf (scripts/setup does)";
    return nullptr;
  }
  TempDir tmp;
  const std::string gen = "protoc --proto_path=" + oracles + " --python_out=" + tmp.path().string() + " " + oracles +
                          "/tfevent.proto 2>" + (tmp.path() / "protoc.err").string();
  if (std::system(gen.c_str()) != 0) {
    ADD_FAILURE() << "protoc failed: " << read_text(tmp.path() / "protoc.err");
    return nullptr;
  }
  const fs::path out = tmp.path() / "out.json", err = tmp.path() / "err.txt";
  const std::string cmd = "/usr/bin/python3 " + oracles + "/read_tfevents.py " + tmp.path().string() + " '" +
                          event_file + "' >" + out.string() + " 2>" + err.string();
  if (std::system(cmd.c_str()) != 0) {
    ADD_FAILURE() << "read_tfevents.py rejected " << event_file << ": " << read_text(err);
    return nullptr;
  }
  return json::parse(read_text(out));
}

}  // namespace

TEST(TrackTrackerCrc32c, KnownVectors) {
  EXPECT_EQ(track::crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(track::crc32c(""), 0u);
  // RFC 3720 (iSCSI) B.4 vectors.
  EXPECT_EQ(track::crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(track::crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string inc;
  for (int i = 0; i < 32; ++i) inc.push_back(static_cast<char>(i));
  EXPECT_EQ(track::crc32c(inc), 0x46DD794Eu);
  const uint32_t c = 0xE3069283u;
  EXPECT_EQ(track::masked_crc32c("123456789"), ((c >> 15) | (c << 17)) + 0xa282ead8u);
}

TEST(TrackTracker, StripsReducerTags) {
  EXPECT_EQ(track::strip_reducer_tag("actor/pg_loss@sum"), "actor/pg_loss");
  EXPECT_EQ(track::strip_reducer_tag("a@b@max"), "a@b");  // only the last tag, as rsplit("@", 1)
  EXPECT_EQ(track::strip_reducer_tag("critic/score/mean"), "critic/score/mean");
  RecordingTracker t;
  t.log(4, {{"actor/pg_loss@sum", 1.5}, {"time/step_total", 2}, {"note", "x"}});
  ASSERT_EQ(t.steps.size(), 1u);
  EXPECT_EQ(t.steps[0].first, 4);
  EXPECT_EQ(t.steps[0].second, json({{"actor/pg_loss", 1.5}, {"time/step_total", 2}, {"note", "x"}}));
}

TEST(TrackTracker, MultiTrackerStripsOnce) {
  auto a = std::make_unique<RecordingTracker>(), b = std::make_unique<RecordingTracker>();
  RecordingTracker *ra = a.get(), *rb = b.get();
  std::vector<std::unique_ptr<track::Tracker>> all;
  all.push_back(std::move(a));
  all.push_back(std::move(b));
  track::MultiTracker multi(std::move(all));
  multi.log(2, {{"a@b@max", 1}});
  multi.log_hparams({{"k", json::array({1})}});
  for (RecordingTracker* r : {ra, rb}) {
    ASSERT_EQ(r->steps.size(), 1u);
    EXPECT_EQ(r->steps[0].second, json({{"a@b", 1}}));
    EXPECT_EQ(r->hparams, json({{"k", "[1]"}}));
  }
}

TEST(TrackTracker, RejectsNestedMetricsNamingTheKey) {
  RecordingTracker t;
  try {
    t.log(1, {{"actor/lens", json::array({1, 2})}});
    FAIL() << "expected roll::Error";
  } catch (const roll::Error& e) {
    EXPECT_NE(std::string(e.what()).find("actor/lens"), std::string::npos) << e.what();
  }
  EXPECT_THROW(t.log(1, json::array()), roll::Error);
}

TEST(TrackTracker, HparamsStringifyNonScalars) {
  RecordingTracker t;
  t.log_hparams({{"lr", 1e-6}, {"ids", json::array({1, 2})}, {"none", nullptr}, {"name", "x"}});
  EXPECT_EQ(t.hparams, json({{"lr", 1e-6}, {"ids", "[1,2]"}, {"none", "None"}, {"name", "x"}}));
}

TEST(TrackTracker, StdoutLineIsRollsFormat) {
  std::vector<std::string> lines;
  track::StdoutTracker t([&](std::string_view l) { lines.emplace_back(l); });
  t.log(3, {{"actor/pg_loss@mean", 0.5}, {"system/step", 3}, {"tag", "q\u00e9"}, {"bad", NAN}});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "metrics_tag: {\"step\": 3, \"metrics\": {\"actor/pg_loss\": 0.5, \"bad\": NaN, \"system/step\": 3, "
            "\"tag\": \"q\\u00e9\"}}");
}

TEST(TrackTracker, StdoutGoesThroughTheLog) {
  auto t = track::make_tracker("stdout", "");
  testing::internal::CaptureStderr();
  t->log(7, {{"x@sum", 1}});
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("metrics_tag: {\"step\": 7, \"metrics\": {\"x\": 1}}"), std::string::npos) << err;
}

TEST(TrackTracker, JsonlOneLinePerStepFlushedAtOnce) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "run";
  track::JsonlTracker t(dir.string());
  t.log(0, {{"actor/pg_loss@sum", 0.25}, {"text", "hi"}});
  t.log(1, {{"actor/pg_loss@sum", -1}, {"loss", INFINITY}});
  // Read before flush()/finish(): every step is already in the file.
  std::istringstream lines(read_text(dir / "metrics.jsonl"));
  std::vector<json> rows;
  for (std::string l; std::getline(lines, l);) rows.push_back(json::parse(l));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], json({{"step", 0}, {"metrics", {{"actor/pg_loss", 0.25}, {"text", "hi"}}}}));
  EXPECT_EQ(rows[1], json({{"step", 1}, {"metrics", {{"actor/pg_loss", -1}, {"loss", nullptr}}}}));
  t.log_hparams({{"seed", 42}});
  EXPECT_EQ(json::parse(read_text(dir / "hparams.json")), json({{"seed", 42}}));
  t.finish();
  EXPECT_THROW(t.log(2, {{"a", 1}}), roll::Error);
}

TEST(TrackTracker, FactoryNamesAndErrors) {
  EXPECT_NE(dynamic_cast<track::NullTracker*>(track::make_tracker("", "").get()), nullptr);
  EXPECT_NE(dynamic_cast<track::StdoutTracker*>(track::make_tracker("stdout", "").get()), nullptr);
  try {
    track::make_tracker("mlflow", "/nonexistent");
    FAIL() << "expected ConfigError";
  } catch (const roll::ConfigError& e) {
    EXPECT_EQ(e.key(), "track_with");
    const std::string what = e.what();
    for (const char* n : {"mlflow", "tensorboard", "jsonl", "stdout"})
      EXPECT_NE(what.find(n), std::string::npos) << what;
  }
}

// wandb, swanlab, trackio upload to a service; rollcpp writes what they would show, offline.
TEST(TrackTracker, UploadTrackersWriteEventFilesAndJsonlAndSayHowToUpload) {
  for (const char* name : {"wandb", "swanlab", "trackio"}) {
    SCOPED_TRACE(name);
    TempDir tmp;
    roll::config::PipelineConfig c;
    c.exp_name = "demo";
    c.output_dir = tmp.path().string();
    c.track_with = name;
    const auto start = std::chrono::system_clock::now();
    std::string logged;
    {
      auto t = track::make_tracker(c, roll::config::write_pipeline_config(c), start);
      t->log(3, {{"critic/score/mean@mean", 0.5}});
      t->finish();
    }
    const fs::path dir = track::tracker_log_dir(c, start);
    EXPECT_EQ(read_text(dir / "metrics.jsonl"), "{\"step\":3,\"metrics\":{\"critic/score/mean\":0.5}}\n");
    int event_files = 0;
    for (const auto& e : fs::directory_iterator(dir))
      event_files += e.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
    EXPECT_EQ(event_files, 1);
    const std::string notice = roll::config::upload_tracker_notice(name, dir.string());
    EXPECT_NE(notice.find(dir.string()), std::string::npos) << notice;
    EXPECT_NE(notice.find("never uses the network"), std::string::npos) << notice;
  }
  EXPECT_NE(roll::config::upload_tracker_notice("wandb", "D").find("wandb sync --sync-tensorboard D"), std::string::npos);
  EXPECT_NE(roll::config::upload_tracker_notice("swanlab", "D").find("swanlab convert -t tensorboard --tb-log-dir D"),
            std::string::npos);
}

TEST(TrackTracker, SwanlabReadsItsOwnLogdirKey) {
  TempDir tmp;
  roll::config::PipelineConfig c;
  c.exp_name = "demo";
  c.track_with = "swanlab";
  c.tracker_kwargs = roll::config::parse_yaml_text("{logdir: " + (tmp.path() / "swan").string() + ", project: p}", {});
  const auto start = std::chrono::system_clock::now();
  EXPECT_EQ(fs::path(track::tracker_log_dir(c, start)).parent_path(), tmp.path() / "swan" / "demo");
  c.track_with = "wandb";  // only swanlab has that key
  EXPECT_EQ(fs::path(track::tracker_log_dir(c, start)).parent_path().parent_path(), fs::path(c.output_dir));
}

TEST(TrackTracker, LogDirRule) {
  std::tm tm{};
  tm.tm_year = 2025 - 1900;
  tm.tm_mon = 2;
  tm.tm_mday = 4;
  tm.tm_hour = 5;
  tm.tm_min = 6;
  tm.tm_sec = 7;
  tm.tm_isdst = -1;
  const auto start = std::chrono::system_clock::from_time_t(std::mktime(&tm));
  roll::config::PipelineConfig c;
  c.exp_name = "exp";
  c.output_dir = "/out";
  EXPECT_EQ(track::tracker_log_dir(c, start), "/out/exp/20250304-050607");
  c.tracker_kwargs = roll::config::parse_yaml_text("{log_dir: /tb, project: p}", {});
  EXPECT_EQ(track::tracker_log_dir(c, start), "/tb/exp/20250304-050607");
  c.tracker_kwargs = roll::config::parse_yaml_text("{log_dir: [1]}", {});
  try {
    track::tracker_log_dir(c, start);
    FAIL() << "expected ConfigError";
  } catch (const roll::ConfigError& e) {
    EXPECT_EQ(e.key(), "tracker_kwargs.log_dir");
  }
}

TEST(TrackTracker, FlattenConfigKeepsTypes) {
  const auto tree = roll::config::parse_yaml_text(
      "a: {b: 1, c: \"x\", d: [1, two], e: {}}\nf: 1.5\ng: true\nh: '7'\nn: null\nw: plain", {});
  EXPECT_EQ(track::flatten_config(tree), json({{"a.b", 1},
                                               {"a.c", "x"},
                                               {"a.d", "[1,\"two\"]"},
                                               {"a.e", "{}"},
                                               {"f", 1.5},
                                               {"g", true},
                                               {"h", "7"},
                                               {"n", "None"},
                                               {"w", "plain"}}));
  EXPECT_EQ(track::hparams_markdown({{"k", "a|b"}, {"n", 2}}), "| name | value |\n|---|---|\n| k | a\\|b |\n| n | 2 |\n");
}

TEST(TrackTracker, MakeTrackerFromConfigLogsHparams) {
  TempDir tmp;
  roll::config::PipelineConfig c;
  c.exp_name = "demo";
  c.output_dir = tmp.path().string();
  c.track_with = "jsonl";
  c.seed = 7;
  const auto start = std::chrono::system_clock::now();
  auto t = track::make_tracker(c, roll::config::write_pipeline_config(c), start);
  t->log(0, {{"a", 1}});
  t->finish();
  const fs::path dir = track::tracker_log_dir(c, start);
  EXPECT_EQ(dir.parent_path(), tmp.path() / "demo");
  const json h = json::parse(read_text(dir / "hparams.json"));
  EXPECT_EQ(h.at("seed"), 7);
  EXPECT_EQ(h.at("track_with"), "jsonl");
  EXPECT_EQ(h.at("exp_name"), "demo");
  EXPECT_EQ(read_text(dir / "metrics.jsonl"), "{\"step\":0,\"metrics\":{\"a\":1}}\n");
}

TEST(TrackTrackerTensorboard, EventFileReadsBackWithTheOracle) {
  TempDir tmp;
  track::TensorBoardTracker t({(tmp.path() / "tb").string()});
  const std::string file = t.event_file();
  EXPECT_EQ(fs::path(file).parent_path(), tmp.path() / "tb");
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  EXPECT_EQ(fs::path(file).filename().string().rfind("events.out.tfevents.", 0), 0u) << file;
  EXPECT_NE(file.find(host), std::string::npos) << file;

  t.log_hparams({{"actor_train.lr", 1e-6}, {"seed", 42}, {"use_kl", true}, {"name", "run|1"}});
  struct Row { int64_t step; std::string tag; double value; };
  std::vector<Row> written;
  for (int64_t step : std::vector<int64_t>{0, 1, 2, 1000000000000LL}) {
    const double loss = 0.1 * static_cast<double>(step % 7) - 1.0 / 3.0;
    json m = {{"actor/pg_loss@sum", loss}, {"critic/score/mean", 3 + step % 5}, {"flag", step % 2 == 0},
              {"skipped", nullptr}};
    if (step == 2) m["sample/text"] = "héllo\nworld";
    t.log(step, m);
    written.push_back({step, "actor/pg_loss", loss});
    written.push_back({step, "critic/score/mean", static_cast<double>(3 + step % 5)});
    written.push_back({step, "flag", step % 2 == 0 ? 1.0 : 0.0});
  }
  t.flush();  // all of it is on disk now, before finish()
  const json r = read_events(file);
  ASSERT_FALSE(r.is_null());
  EXPECT_EQ(r.at("file_version"), "brain.Event:2");
  EXPECT_EQ(r.at("records"), 1 + 2 + 4);

  const json& s = r.at("scalars");
  ASSERT_EQ(s.size(), written.size());
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (size_t i = 0; i < written.size(); ++i) {
    EXPECT_EQ(s[i].at("step"), written[i].step) << i;
    EXPECT_EQ(s[i].at("tag"), written[i].tag) << i;
    EXPECT_EQ(s[i].at("value").get<double>(), static_cast<double>(static_cast<float>(written[i].value))) << i;
    EXPECT_NEAR(s[i].at("wall_time").get<double>(), now, 60.0) << i;
  }

  const json& texts = r.at("texts");
  ASSERT_EQ(texts.size(), 2u);
  EXPECT_EQ(texts[0].at("tag"), "hparams");
  EXPECT_EQ(texts[0].at("text"), "| name | value |\n|---|---|\n| actor_train.lr | 1e-06 |\n| name | run\\|1 |\n"
                                  "| seed | 42 |\n| use_kl | true |\n");
  EXPECT_EQ(texts[1], json({{"step", 2}, {"tag", "sample/text"}, {"text", "héllo\nworld"}}));

  EXPECT_EQ(r.at("hparams"), json({{"actor_train.lr", 1e-6}, {"seed", 42.0}, {"use_kl", true}, {"name", "run|1"}}));
  EXPECT_NEAR(r.at("hparams_start_time").get<double>(), now, 60.0);

  t.finish();
  EXPECT_THROW(t.log(5, {{"a", 1}}), roll::Error);
  EXPECT_EQ(read_events(file).at("records"), 7);
}

TEST(TrackTrackerTensorboard, BoundedQueueLosesNothing) {
  TempDir tmp;
  std::string file;
  {
    track::TensorBoardTracker t({tmp.path().string(), /*max_queue=*/2});
    file = t.event_file();
    for (int step = 0; step < 200; ++step) t.log(step, {{"x", step * 0.5}});
  }  // the destructor finishes
  const json r = read_events(file);
  ASSERT_FALSE(r.is_null());
  ASSERT_EQ(r.at("scalars").size(), 200u);
  for (int step = 0; step < 200; ++step) {
    EXPECT_EQ(r["scalars"][step].at("step"), step);
    EXPECT_EQ(r["scalars"][step].at("value"), step * 0.5);
  }
}

TEST(TrackTrackerTensorboard, TwoWritersInOneDirectoryGetTwoFiles) {
  TempDir tmp;
  track::TensorBoardTracker a({tmp.path().string()}), b({tmp.path().string()});
  EXPECT_NE(a.event_file(), b.event_file());
}

TEST(TrackTrackerTensorboard, UnwritableLogDirNamesThePath) {
  TempDir tmp;
  std::ofstream(tmp.path() / "file") << "x";
  const std::string bad = (tmp.path() / "file" / "tb").string();
  try {
    track::TensorBoardTracker t({bad});
    FAIL() << "expected roll::Error";
  } catch (const roll::Error& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
}
