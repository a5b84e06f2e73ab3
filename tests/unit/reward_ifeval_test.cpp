// IfevalReward, ROLL's GeneralRuleRewardWorker (docs/rewards.md, "ifeval"), against
// tests/data/rule_rewards/ifeval_cases.jsonl: 63 cases over the 24 checks that do not call
// langdetect, with expected values from running ROLL's own ifeval_rule_reward_worker.py functions
// (tests/oracles/rule_rewards.py regenerates them); the language check against langdetect itself
// (language_cases.jsonl).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "read_jsonl.h"
#include "roll/reward/rule/ifeval_checks.h"
#include "roll/reward/rule/ifeval_reward.h"
#include "roll/reward/rule/language_guess.h"
#include "roll/reward/rule/py_text.h"

namespace roll::reward {
namespace {

std::vector<nlohmann::json> cases() {
  return roll::testing::read_jsonl(std::string(ROLL_SOURCE_DIR) + "/tests/data/rule_rewards/ifeval_cases.jsonl");
}

TEST(RewardIfeval, MatchesRollOnEveryTableCase) {
  const auto rows = cases();
  ASSERT_GE(rows.size(), 20u);
  const IfevalReward reward;
  for (const auto& c : rows) {
    SCOPED_TRACE(c.dump());
    // The ground truth arrives as ROLL's dataset stores it: a JSON string.
    const IfevalResult r = reward.score(c["response"].get<std::string>(), c["ground_truth"], c["tag"].get<std::string>());
    EXPECT_EQ(r.score, c["score"].get<double>());
    EXPECT_NEAR(r.repetition_penalty, c["repetition_penalty"].get<double>(), 1e-12);
    EXPECT_EQ(r.response_level_reward, c["response_level_reward"].get<double>());
  }
}

TEST(RewardIfeval, TableCoversEveryNonLanguageCheckBothWays) {
  std::set<std::string> passed, failed;
  for (const auto& c : cases()) {
    const auto truth = nlohmann::json::parse(c["ground_truth"].get<std::string>());
    (c["score"].get<double>() > 0 ? passed : failed).insert(truth["func_name"].get<std::string>());
  }
  for (const std::string& name : ifeval_function_names()) {
    if (name == "validate_response_language") continue;
    EXPECT_TRUE(passed.count(name)) << name << " has no passing case";
  }
  EXPECT_GE(failed.size(), 20u);
  EXPECT_EQ(ifeval_function_names().size(), 25u);
}

TEST(RewardIfeval, OutcomesSayWhyAZeroIsNotAFailedCheck) {
  const IfevalReward reward;
  EXPECT_EQ(reward.score("text", nlohmann::json("{\"func_name\": \"validate_lowercase\"}"), "math").outcome,
            IfevalOutcome::unknown_tag);
  EXPECT_EQ(reward.score("text", nlohmann::json("not json"), "ifeval").outcome, IfevalOutcome::bad_ground_truth);
  const IfevalResult unknown = reward.score("text", nlohmann::json{{"func_name", "no_such_check"}}, "ifeval");
  EXPECT_EQ(unknown.outcome, IfevalOutcome::unknown_function);
  EXPECT_EQ(unknown.score, 0.0);
  // A parameter Python would not accept fails the check with the reason.
  const IfevalResult bad = reward.score("text", nlohmann::json{{"func_name", "verify_keywords"}}, "ifeval");
  EXPECT_EQ(bad.outcome, IfevalOutcome::checked);
  EXPECT_EQ(bad.score, 0.0);
  EXPECT_FALSE(bad.error.empty());
  // A ground truth given as an object (not a string) is read the same way.
  EXPECT_EQ(reward.score("all lower", nlohmann::json{{"func_name", "validate_lowercase"}}, "ifeval").score, 1.0);
}

// langdetect (python3-langdetect, the library ROLL's check calls) on 18 sentences in 18 languages:
// the stand-in must name the same language for each, and the check must pass for that code only.
TEST(RewardIfeval, LanguageCheckAgreesWithLangdetect) {
  const auto rows = roll::testing::read_jsonl(std::string(ROLL_SOURCE_DIR) + "/tests/data/rule_rewards/language_cases.jsonl");
  const IfevalReward reward;
  auto check = [&](const std::string& text, const std::string& code) {
    return reward.score(text, nlohmann::json{{"func_name", "validate_response_language"}, {"language", code}}, "ifeval")
        .score;
  };
  for (const auto& c : rows) {
    const std::string text = c["text"], detected = c["detected"];
    SCOPED_TRACE(text);
    EXPECT_EQ(rule::guess_language(rule::from_utf8(text)), detected);
    EXPECT_EQ(check(text, detected), 1.0);
    EXPECT_EQ(check(text, detected == "en" ? "de" : "en"), 0.0);
  }
  EXPECT_GE(rows.size(), 18u);
  EXPECT_EQ(check("12345 !!!", "en"), 0.0);  // no letters: langdetect raises, the check fails
  EXPECT_EQ(rule::guess_language(rule::from_utf8("")), "");
}

TEST(RewardIfevalPyText, PythonStringSemantics) {
  using rule::from_utf8;
  EXPECT_EQ(rule::py_split(from_utf8(" a\u00a0b\tc\n")).size(), 3u);  // NBSP is whitespace to Python
  EXPECT_EQ(rule::py_splitlines(from_utf8("a\r\nb\x1c" "c\u2028d")).size(), 4u);
  EXPECT_EQ(rule::py_count(from_utf8("aaaa"), from_utf8("aa")), 2u);
  EXPECT_EQ(rule::py_count(from_utf8("abc"), from_utf8("")), 4u);
  EXPECT_TRUE(rule::py_equals_upper(from_utf8("ÄÖÜ 123!")));
  EXPECT_FALSE(rule::py_equals_lower(from_utf8("straße Ä")));
  EXPECT_EQ(rule::word_runs(from_utf8("it's a_b, c1")).size(), 4u);  // it, s, a_b, c1
  EXPECT_EQ(ifeval_sentence_count("Mr. Smith went home. He slept."), 2u);
  EXPECT_TRUE(python_json_loads_ok("[NaN, -Infinity, 1e5]"));
  EXPECT_FALSE(python_json_loads_ok("{'a': 1}"));
  EXPECT_FALSE(python_json_loads_ok(std::string(1000, '[') + std::string(1000, ']')));
}

}  // namespace
}  // namespace roll::reward
