// Resume with a changed config: which keys may change, what is refused and how it is named; the
// pipeline checkpoint keeps the config and is written whole.
#include <gtest/gtest.h>

#include <filesystem>

#include "config_test_util.h"
#include "roll/core/error.h"
#include "roll/pipeline/pipeline_state.h"
#include "roll/pipeline/resume_config.h"

using namespace roll;
using namespace roll::pipeline;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json written() {
  return json::parse(R"json({
    "exp_name": "a", "seed": 42, "max_steps": 4, "save_steps": 1, "output_dir": "./out",
    "actor_train": {"training_args": {"learning_rate": 1e-6, "per_device_train_batch_size": 2},
                    "device_mapping": "list(range(0,1))"},
    "validation": {"data_args": {"file_name": ["data/test.jsonl"]}},
    "tracker_kwargs": {"log_dir": "./logs"}})json");
}

}  // namespace

TEST(PipelineResumeConfig, TheSameConfigHasNoChanges) {
  EXPECT_TRUE(config_changes(written(), written()).empty());
  EXPECT_TRUE(check_resume_config("ckpt", written(), written()).empty());
}

TEST(PipelineResumeConfig, RunControlLoggingAndEvaluationMayChange) {
  json now = written();
  now["max_steps"] = 8;
  now["output_dir"] = "./elsewhere";
  now["validation"]["data_args"]["file_name"] = json::array({"data/other.jsonl"});
  now["tracker_kwargs"]["log_dir"] = "./logs2";
  now["resume_from_checkpoint"] = "true";  // absent in the checkpoint's run
  const auto allowed = check_resume_config("ckpt", written(), now);
  std::vector<std::string> keys;
  for (const auto& c : allowed) keys.push_back(c.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"max_steps", "output_dir", "resume_from_checkpoint",
                                            "tracker_kwargs.log_dir", "validation.data_args.file_name"}));
  EXPECT_EQ(allowed[2].before, "<absent>");
  EXPECT_EQ(allowed[2].after, "\"true\"");
}

TEST(PipelineResumeConfig, AnyOtherChangeIsRefusedNamingEveryKeyAndBothValues) {
  json now = written();
  now["seed"] = 7;
  now["actor_train"]["training_args"]["learning_rate"] = 1e-5;
  now["max_steps"] = 8;  // allowed, not listed among the refused
  try {
    check_resume_config("out/pipeline/checkpoint-2", written(), now);
    FAIL() << "a changed seed and learning rate were accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.key(), "actor_train.training_args.learning_rate");  // the first in key order
    EXPECT_NE(what.find("out/pipeline/checkpoint-2"), std::string::npos) << what;
    EXPECT_NE(what.find("seed: 42 -> 7"), std::string::npos) << what;
    EXPECT_NE(what.find("actor_train.training_args.learning_rate: 1e-06 -> 1e-05"), std::string::npos) << what;
    EXPECT_EQ(what.find("max_steps:"), std::string::npos) << what;
  }
}

TEST(PipelineResumeConfig, AddedAndRemovedKeysCountAndPrefixesMatchWholeNames) {
  json now = written();
  now.erase("save_steps");                  // allowed: removed
  now["max_steps_per_epoch"] = 3;           // not covered by max_steps (a prefix matches at a '.')
  now["actor_train"].erase("device_mapping");
  EXPECT_THROW(check_resume_config("ckpt", written(), now), ConfigError);
  const auto changes = config_changes(written(), now);
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[0].key, "actor_train.device_mapping");
  EXPECT_EQ(changes[0].after, "<absent>");
  EXPECT_EQ(changes[1].key, "max_steps_per_epoch");
  EXPECT_EQ(changes[2].key, "save_steps");
}

TEST(PipelineResumeConfig, ACheckpointWithoutAConfigIsNotCompared) {
  EXPECT_TRUE(check_resume_config("ckpt", json(), written()).empty());
}

TEST(PipelineResumeConfig, TheStateKeepsTheConfigAndIsWrittenWhole) {
  roll::testing::TempConfigDir dir;
  const std::string out = dir.path();
  PipelineState st;
  st.step = 2;
  st.exp_name = "a";
  st.config = written();
  save_pipeline_state(pipeline_checkpoint_dir(out, 2), st);
  EXPECT_FALSE(fs::exists(pipeline_checkpoint_dir(out, 2) + ".partial"));
  const PipelineState back = load_pipeline_state(pipeline_checkpoint_dir(out, 2));
  EXPECT_EQ(back.config, written());
  // Saved again (a resumed run reaching the same step): replaced whole.
  st.config["seed"] = 1;
  save_pipeline_state(pipeline_checkpoint_dir(out, 2), st);
  EXPECT_EQ(load_pipeline_state(pipeline_checkpoint_dir(out, 2)).config["seed"], 1);
  // Pruning renames before removing and leaves nothing behind.
  save_pipeline_state(pipeline_checkpoint_dir(out, 3), st);
  prune_checkpoints(out, 1);
  EXPECT_FALSE(fs::exists(pipeline_checkpoint_dir(out, 2)));
  EXPECT_FALSE(fs::exists(pipeline_checkpoint_dir(out, 2) + ".removing"));
  EXPECT_TRUE(fs::exists(pipeline_checkpoint_dir(out, 3)));
}
