// Hydra-style composition and command-line overrides.
#include <gtest/gtest.h>

#include "config_test_util.h"
#include "roll/config/compose.h"
#include "roll/config/interpolate.h"

using namespace roll;
using namespace roll::config;
using roll::testing::error_of;
using roll::testing::TempConfigDir;

namespace {

NodePtr composed(const TempConfigDir& d, const std::string& sub, const std::string& name,
                 std::vector<std::string> overrides = {}) {
  return compose({d.path() + "/" + sub, name, std::move(overrides)});
}

std::string text_at(const NodePtr& root, const std::string& dotted) {
  NodePtr cur = root;
  for (const auto& p : split_path(dotted)) {
    if (!cur || !cur->is_map()) return "<missing>";
    cur = cur->get(p);
  }
  if (!cur) return "<missing>";
  return cur->is_scalar() ? cur->text() : std::string("<") + cur->kind_name() + ">";
}

}  // namespace

TEST(ConfigCompose, PrimaryOverridesHereIncludeAndSelfIsLastByDefault) {
  TempConfigDir d;
  d.write("config/envs.yaml", "max_tokens_per_step: 128\nkeep_me: 1\nnested: {a: 1, b: 2}\n");
  d.write("exp/main.yaml", "defaults:\n  - ../config/envs@_here_\nmax_tokens_per_step: 64\nnested: {b: 3}\n");
  auto root = composed(d, "exp", "main");
  EXPECT_EQ(text_at(root, "max_tokens_per_step"), "64");
  EXPECT_EQ(text_at(root, "keep_me"), "1");
  EXPECT_EQ(text_at(root, "nested.a"), "1");  // maps merge key by key
  EXPECT_EQ(text_at(root, "nested.b"), "3");
  EXPECT_FALSE(root->has("defaults"));
}

TEST(ConfigCompose, ExplicitSelfFirstLetsIncludesWin) {
  TempConfigDir d;
  d.write("config/envs.yaml", "x: from_include\n");
  d.write("exp/main.yaml", "defaults:\n  - _self_\n  - ../config/envs@_here_\nx: from_primary\n");
  EXPECT_EQ(text_at(composed(d, "exp", "main"), "x"), "from_include");
}

TEST(ConfigCompose, IncludesApplyInListOrder) {
  TempConfigDir d;
  d.write("config/a.yaml", "x: a\ny: a\n");
  d.write("config/b.yaml", "x: b\n");
  d.write("exp/main.yaml", "defaults:\n  - ../config/a@_here_\n  - ../config/b@_here_\n");
  auto root = composed(d, "exp", "main");
  EXPECT_EQ(text_at(root, "x"), "b");
  EXPECT_EQ(text_at(root, "y"), "a");
}

TEST(ConfigCompose, PackageTargetsAndGroupDefaults) {
  TempConfigDir d;
  d.write("config/zero.yaml", "stage: 3\n");
  d.write("exp/opt/adam.yaml", "lr: 0.1\n");
  d.write("exp/main.yaml",
          "defaults:\n  - ../config/zero@strategy.deepspeed\n  - ../config/zero\n  - opt: adam\n  - opt@other: adam\n");
  auto root = composed(d, "exp", "main");
  EXPECT_EQ(text_at(root, "strategy.deepspeed.stage"), "3");
  EXPECT_EQ(text_at(root, "config.stage"), "3");  // no @: the include's group is its package
  EXPECT_EQ(text_at(root, "opt.lr"), "0.1");
  EXPECT_EQ(text_at(root, "other.lr"), "0.1");
}

TEST(ConfigCompose, NestedIncludesResolveRelativeToTheirOwnFile) {
  TempConfigDir d;
  d.write("lib/inner/leaf.yaml", "leaf: yes_leaf\n");
  d.write("lib/mid.yaml", "defaults:\n  - inner/leaf@_here_\nmid: 1\n");
  d.write("exp/main.yaml", "defaults:\n  - ../lib/mid@_here_\n");
  auto root = composed(d, "exp", "main");
  EXPECT_EQ(text_at(root, "leaf"), "yes_leaf");
  EXPECT_EQ(text_at(root, "mid"), "1");
}

TEST(ConfigCompose, MissingIncludeNamesEntryFileAndLine) {
  TempConfigDir d;
  d.write("exp/main.yaml", "a: 1\ndefaults:\n  - ../config/nope@_here_\n");
  auto msg = error_of([&] { composed(d, "exp", "main"); });
  EXPECT_NE(msg.find("../config/nope"), std::string::npos) << msg;
  EXPECT_NE(msg.find("main.yaml:3"), std::string::npos) << msg;
}

TEST(ConfigCompose, OptionalMissingIncludeIsSkipped) {
  TempConfigDir d;
  d.write("exp/main.yaml", "defaults:\n  - optional ../config/nope@_here_\na: 1\n");
  EXPECT_EQ(text_at(composed(d, "exp", "main"), "a"), "1");
}

TEST(ConfigCompose, IncludeCycleIsAnError) {
  TempConfigDir d;
  d.write("c/a.yaml", "defaults:\n  - b@_here_\n");
  d.write("c/b.yaml", "defaults:\n  - a@_here_\n");
  auto msg = error_of([&] { composed(d, "c", "a"); });
  EXPECT_NE(msg.find("include cycle"), std::string::npos) << msg;
}

TEST(ConfigCompose, MissingConfigFileAndPathAreNamed) {
  TempConfigDir d;
  d.write("exp/main.yaml", "a: 1\n");
  EXPECT_NE(error_of([&] { composed(d, "exp", "other"); }).find("other.yaml"), std::string::npos);
  EXPECT_NE(error_of([&] { composed(d, "nodir", "main"); }).find("--config_path"), std::string::npos);
}

TEST(ConfigCompose, YamlSyntaxErrorNamesFileAndLine) {
  TempConfigDir d;
  d.write("exp/main.yaml", "a: 1\nb: [1, 2\nc: 3\n");
  auto msg = error_of([&] { composed(d, "exp", "main"); });
  EXPECT_NE(msg.find("main.yaml:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("YAML syntax error"), std::string::npos) << msg;
}

TEST(ConfigCompose, DuplicateKeyIsAnError) {
  TempConfigDir d;
  d.write("exp/main.yaml", "a: 1\na: 2\n");
  auto msg = error_of([&] { composed(d, "exp", "main"); });
  EXPECT_NE(msg.find("duplicate key 'a'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("main.yaml:2"), std::string::npos) << msg;
}

TEST(ConfigCompose, OverridesApplyAfterCompositionAndBeforeInterpolation) {
  TempConfigDir d;
  d.write("config/envs.yaml", "max_actions: 10\nenv: {max_steps: '${max_actions}'}\n");
  d.write("exp/main.yaml", "defaults:\n  - ../config/envs@_here_\nrollout: {batch: 8}\n");
  auto root = composed(d, "exp", "main",
                       {"max_actions=5", "rollout.batch=16", "+new.key=[1, 2]", "~rollout.batch", "a.b.c=x"});
  auto r = resolve(root);
  EXPECT_EQ(text_at(r, "env.max_steps"), "5");
  EXPECT_EQ(text_at(r, "rollout.batch"), "<missing>");
  EXPECT_EQ(text_at(r, "new.key"), "<list>");
  EXPECT_EQ(text_at(r, "a.b.c"), "x");
}

TEST(ConfigCompose, OverrideIntoScalarAndMalformedOverrideAreErrors) {
  TempConfigDir d;
  d.write("exp/main.yaml", "a: 1\n");
  auto msg = error_of([&] { composed(d, "exp", "main", {"a.b=2"}); });
  EXPECT_NE(msg.find("'a'"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { composed(d, "exp", "main", {"justakey"}); }).find("key=value"), std::string::npos);
}
