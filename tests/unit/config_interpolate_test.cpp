// OmegaConf-style ${...} interpolation.
#include <gtest/gtest.h>

#include <map>

#include "config_test_util.h"
#include "roll/config/interpolate.h"

using namespace roll;
using namespace roll::config;
using roll::testing::error_of;

namespace {

NodePtr parse(const std::string& yaml) { return parse_yaml_text(yaml, SourceLoc{"test.yaml", 1}); }

NodePtr at(const NodePtr& root, const std::string& dotted) {
  NodePtr cur = root;
  for (const auto& p : split_path(dotted)) {
    if (!cur) return nullptr;
    if (cur->is_map()) {
      cur = cur->get(p);
    } else if (cur->is_sequence()) {
      cur = cur->items().at(std::stoul(p));
    } else {
      return nullptr;
    }
  }
  return cur;
}

std::string text(const NodePtr& root, const std::string& dotted) {
  auto n = at(root, dotted);
  return n && n->is_scalar() ? n->text() : "<not a scalar>";
}

ResolveOptions env_of(std::map<std::string, std::string> vars) {
  ResolveOptions o;
  o.getenv = [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  return o;
}

}  // namespace

TEST(ConfigInterpolate, ScalarReferenceKeepsText) {
  auto r = resolve(parse("a: 10\nb: ${a}\nc: {d: '${b}'}\n"));  // YAML needs quotes inside {}
  EXPECT_EQ(text(r, "b"), "10");
  EXPECT_EQ(text(r, "c.d"), "10");  // nested: c.d -> b -> a
}

TEST(ConfigInterpolate, InsideStrings) {
  auto r = resolve(parse("pg_variant: ppo\nexp_name: Qwen3-8B-RLVR-${pg_variant}\ntwo: ${pg_variant}_${pg_variant}\n"));
  EXPECT_EQ(text(r, "exp_name"), "Qwen3-8B-RLVR-ppo");
  EXPECT_EQ(text(r, "two"), "ppo_ppo");
}

TEST(ConfigInterpolate, WholeNodeReferenceCopiesMappingAndSeesLaterValues) {
  // custom_envs.FrozenLake: ${custom_env.FrozenLake} must pick up root values (max_actions = 5).
  auto r = resolve(parse("max_actions: 5\n"
                         "custom_env: {FrozenLake: {max_steps: '${max_actions}', env_config: {size: 4}}}\n"
                         "custom_envs: {FrozenLake: '${custom_env.FrozenLake}'}\n"));
  auto fl = at(r, "custom_envs.FrozenLake");
  ASSERT_TRUE(fl && fl->is_map());
  EXPECT_EQ(text(r, "custom_envs.FrozenLake.max_steps"), "5");
  EXPECT_EQ(text(r, "custom_envs.FrozenLake.env_config.size"), "4");
}

TEST(ConfigInterpolate, ReferenceThroughAnInterpolatedContainer) {
  auto r = resolve(parse("src: {x: 1}\nalias: ${src}\nuse: ${alias.x}\n"));
  EXPECT_EQ(text(r, "use"), "1");
}

TEST(ConfigInterpolate, ListIndexAndRelativeReferences) {
  auto r = resolve(parse("lst: [a, b]\nsel: ${lst.1}\ngrp: {x: 7, y: '${.x}', sub: {z: '${..x}'}}\n"));
  EXPECT_EQ(text(r, "sel"), "b");
  EXPECT_EQ(text(r, "grp.y"), "7");
  EXPECT_EQ(text(r, "grp.sub.z"), "7");
}

TEST(ConfigInterpolate, EscapedDollarStaysLiteral) {
  auto r = resolve(parse("a: 1\nb: 'cost \\${a}'\n"));
  EXPECT_EQ(text(r, "b"), "cost ${a}");
}

TEST(ConfigInterpolate, EnvResolverWithAndWithoutDefault) {
  auto r = resolve(parse("a: ${oc.env:HOME_X}\nb: ${oc.env:MISSING,fallback}\nc: ${oc.env:MISSING,null}\n"
                         "d: x-${oc.env:HOME_X}\ne: ${oc.env:MISSING,'q'}\n"),
                   env_of({{"HOME_X", "/h"}}));
  EXPECT_EQ(text(r, "a"), "/h");
  EXPECT_EQ(text(r, "b"), "fallback");
  EXPECT_TRUE(at(r, "c")->is_null());
  EXPECT_EQ(text(r, "d"), "x-/h");
  EXPECT_EQ(text(r, "e"), "q");
}

TEST(ConfigInterpolate, EnvResolverDefaultMayInterpolate) {
  auto r = resolve(parse("base: /data\nout: ${oc.env:OUT_DIR,${base}/out}\n"), env_of({}));
  EXPECT_EQ(text(r, "out"), "/data/out");
}

TEST(ConfigInterpolate, MissingEnvVariableWithoutDefaultNamesKeyAndVariable) {
  auto msg = error_of([] { resolve(parse("tracker: {api_key: '${oc.env:WANDB_API_KEY}'}\n"), env_of({})); });
  EXPECT_NE(msg.find("tracker.api_key"), std::string::npos) << msg;
  EXPECT_NE(msg.find("WANDB_API_KEY"), std::string::npos) << msg;
}

TEST(ConfigInterpolate, NowResolverFormatsTime) {
  auto r = resolve(parse("t: run_${now:%Y}\n"));
  EXPECT_EQ(text(r, "t").size(), std::string("run_2026").size());
}

TEST(ConfigInterpolate, UnsupportedResolverIsNamed) {
  auto msg = error_of([] { resolve(parse("x: ${oc.decode:'1'}\n")); });
  EXPECT_NE(msg.find("oc.decode"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
}

TEST(ConfigInterpolate, MissingKeyNamesReferrerTargetAndLine) {
  auto root = parse_yaml_text("a: 1\nactor: {lr: '${optim.lr}'}\n", SourceLoc{"cfg.yaml", 1});
  auto msg = error_of([&] { resolve(root); });
  EXPECT_NE(msg.find("actor.lr"), std::string::npos) << msg;
  EXPECT_NE(msg.find("optim"), std::string::npos) << msg;
}

TEST(ConfigInterpolate, DirectCycleIsReported) {
  auto msg = error_of([] { resolve(parse("a: ${b}\nb: ${a}\n")); });
  EXPECT_NE(msg.find("cycle"), std::string::npos) << msg;
}

TEST(ConfigInterpolate, SelfAndLongCyclesAreReported) {
  EXPECT_NE(error_of([] { resolve(parse("a: ${a}\n")); }).find("cycle"), std::string::npos);
  EXPECT_NE(error_of([] { resolve(parse("a: x${b}\nb: ${c}\nc: {d: '${a}'}\ne: ${c.d}\n")); }).find("cycle"),
            std::string::npos);
}

TEST(ConfigInterpolate, MappingInsideAStringIsAnError) {
  auto msg = error_of([] { resolve(parse("m: {a: 1}\ns: pre-${m}\n")); });
  EXPECT_NE(msg.find("mapping"), std::string::npos) << msg;
}

TEST(ConfigInterpolate, UnterminatedInterpolationIsAnError) {
  auto msg = error_of([] { resolve(parse("a: 1\nb: 'x-${a'\n")); });
  EXPECT_NE(msg.find("unterminated"), std::string::npos) << msg;
}

TEST(ConfigInterpolate, ReferencedKeysAreReported) {
  std::set<std::string> refs;
  resolve(parse("a: 1\nb: ${a}\nc: {d: 2}\ne: ${c.d}\n"), {}, &refs);
  EXPECT_TRUE(refs.count("a"));
  EXPECT_TRUE(refs.count("c.d"));
  EXPECT_FALSE(refs.count("b"));
}
