// The RLVR query filter from `rewards.<d>.query_filter_config` (docs/rl.md): filter_args read per
// type with ROLL's defaults, errors naming the key, and the per-prompt decision over n rows.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "roll/config/node.h"
#include "roll/config/schema.h"
#include "roll/core/error.h"
#include "roll/pipeline/data/prompt_filter.h"

namespace roll::pipeline {
namespace {

const std::string kKey = "rewards.math_rule.query_filter_config";

config::QueryFilterConfig filter(const std::string& type, const std::string& args_yaml) {
  config::QueryFilterConfig c;
  c.type = type;
  if (!args_yaml.empty()) c.filter_args = config::parse_yaml_text(args_yaml, config::SourceLoc{"test.yaml", 1});
  return c;
}

std::string error_of(const config::QueryFilterConfig& c) {
  try {
    query_filter_params(c, kKey);
  } catch (const ConfigError& e) {
    return e.key() + " | " + e.what();
  }
  return "";
}

TEST(PipelinePromptFilter, ReadsFilterArgsWithRollDefaults) {
  // The thresholds of ROLL's example configs (qwen3-30BA3B-rlvr_megatron, commented out there).
  rl::QueryFilterParams m = query_filter_params(filter("mean_filter", "{threshold_up: 0.9, threshold_down: 0.1}"), kKey);
  EXPECT_EQ(m.type, rl::QueryFilterType::mean_filter);
  EXPECT_DOUBLE_EQ(m.threshold_up, 0.9);
  EXPECT_DOUBLE_EQ(m.threshold_down, 0.1);
  rl::QueryFilterParams d = query_filter_params(filter("mean_filter", ""), kKey);
  EXPECT_TRUE(std::isinf(d.threshold_up) && d.threshold_up > 0);
  EXPECT_DOUBLE_EQ(d.threshold_down, -1.0);
  rl::QueryFilterParams s = query_filter_params(filter("std_filter", "{std_threshold: 0}"), kKey);
  EXPECT_EQ(s.type, rl::QueryFilterType::std_filter);
  EXPECT_DOUBLE_EQ(s.std_threshold, 0.0);
  EXPECT_DOUBLE_EQ(query_filter_params(filter("std_filter", "{}"), kKey).std_threshold, -1.0);
  EXPECT_EQ(query_filter_params(filter("no_filter", ""), kKey).type, rl::QueryFilterType::no_filter);
  EXPECT_EQ(describe(m), "mean_filter(threshold_down=0.1, threshold_up=0.9)");
}

TEST(PipelinePromptFilter, BadArgsNameTheKey) {
  std::string e = error_of(filter("mean_filter", "{threshold_upp: 0.9}"));
  EXPECT_NE(e.find(kKey + ".filter_args.threshold_upp |"), std::string::npos) << e;
  EXPECT_NE(e.find("threshold_down, threshold_up"), std::string::npos) << e;
  e = error_of(filter("std_filter", "{threshold_up: 0.9}"));  // a mean_filter argument
  EXPECT_NE(e.find(kKey + ".filter_args.threshold_up"), std::string::npos) << e;
  e = error_of(filter("mean_filter", "{threshold_up: high}"));
  EXPECT_NE(e.find("must be a number"), std::string::npos) << e;
  e = error_of(filter("mean_filter", "[0.1, 0.9]"));
  EXPECT_NE(e.find(kKey + ".filter_args |"), std::string::npos) << e;
  e = error_of(filter("dapo", ""));
  EXPECT_NE(e.find(kKey + ".type |"), std::string::npos) << e;
  e = error_of(filter("no_filter", "{threshold_up: 1}"));  // no_filter reads nothing
  EXPECT_NE(e.find("reads: nothing"), std::string::npos) << e;
}

TEST(PipelinePromptFilter, KeepsPromptsByTheirRowsOfN) {
  // 4 prompts x 3 samples: all correct, all wrong, mixed, mixed.
  const at::Tensor scores = at::tensor({1.f, 1.f, 1.f, 0.f, 0.f, 0.f, 1.f, 0.f, 0.f, 0.f, 1.f, 1.f});
  rl::QueryFilterParams dapo = query_filter_params(filter("mean_filter", "{threshold_up: 1, threshold_down: 0}"), kKey);
  EXPECT_EQ(keep_prompts(scores, 3, dapo), (std::vector<bool>{false, false, true, true}));
  rl::QueryFilterParams sd = query_filter_params(filter("std_filter", "{std_threshold: 0}"), kKey);
  EXPECT_EQ(keep_prompts(scores, 3, sd), (std::vector<bool>{false, false, true, true}));
  // Mean 1/3 of prompt 2 is dropped by threshold_down 0.4; mean 2/3 of prompt 3 by threshold_up 0.6.
  rl::QueryFilterParams narrow = query_filter_params(filter("mean_filter", "{threshold_up: 0.6, threshold_down: 0.4}"), kKey);
  EXPECT_EQ(keep_prompts(scores, 3, narrow), (std::vector<bool>{false, false, false, false}));
  rl::QueryFilterParams none;
  EXPECT_EQ(keep_prompts(scores, 3, none), (std::vector<bool>(4, true)));
  EXPECT_EQ(keep_prompts(scores, 12, dapo), (std::vector<bool>{true}));  // mean 0.5
  EXPECT_THROW(keep_prompts(scores, 5, dapo), Error);
  EXPECT_THROW(keep_prompts(scores, 0, dapo), Error);
}

TEST(PipelinePromptFilter, UnfilledBatchErrorNamesDomainAndKey) {
  rl::QueryFilterParams p = query_filter_params(filter("std_filter", "{std_threshold: 0}"), kKey);
  try {
    throw_batch_not_filled("math_rule", 1, 4, 12, 12, p, kKey);
    FAIL();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("domain 'math_rule': only 1 of 4 prompts"), std::string::npos) << what;
    EXPECT_NE(what.find(kKey), std::string::npos) << what;
    EXPECT_NE(what.find("std_filter(std_threshold=0)"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace roll::pipeline
