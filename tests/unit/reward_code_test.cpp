// ROLL's local code reward (docs/rewards.md): code extraction, the programs built for each case type, the
// stdout comparison, and scores/error classes of real runs in the sandbox (skipped without root).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "roll/core/error.h"
#include "roll/reward/code_cases.h"
#include "roll/reward/code_reward.h"
#include "roll/reward/sandbox.h"

using namespace roll::reward;
using nlohmann::json;

TEST(RewardCodeExtract, NoFenceTakesTheWholeText) {
  EXPECT_EQ(extract_code("  def f(x):\n    return x\n\n"), "def f(x):\n    return x");
  EXPECT_EQ(extract_code(""), "");
}

TEST(RewardCodeExtract, PrefersTheFirstBlockWithADef) {
  const std::string text =
      "Example:\n```\nprint(f(2))\n```\nSolution:\n```python\ndef f(x):\n    return 2 * x\n```\n"
      "Another:\n```python\ndef g():\n    pass\n```\n";
  EXPECT_EQ(extract_code(text), "def f(x):\n    return 2 * x");
  EXPECT_EQ(fenced_blocks(text).size(), 3u);
}

TEST(RewardCodeExtract, FirstBlockWhenNoneHasADef) {
  EXPECT_EQ(extract_code("```py\nx = int(input())\nprint(x + 1)\n```\nand\n```\nprint(3)\n```"),
            "x = int(input())\nprint(x + 1)");
}

TEST(RewardCodeExtract, BlocksKeepIndentationAndTakeAnUnterminatedFence) {
  EXPECT_EQ(extract_code("```python\n\n    x = 1\n```"), "    x = 1");
  // A generation cut off inside its only block still yields the code.
  EXPECT_EQ(extract_code("Here:\n```python\ndef f():\n    return 1\n"), "def f():\n    return 1");
  // An unterminated fence after a complete block is ignored.
  EXPECT_EQ(extract_code("```\na = 1\n```\n```python\ndef f("), "a = 1");
  EXPECT_EQ(extract_code("``` ```"), "");
}

TEST(RewardCodeExtract, StripsReasoningUpToTheLastMarker) {
  EXPECT_EQ(strip_reasoning("<think>```python\ndef wrong(): pass\n```</think>\n\nanswer"), "answer");
  EXPECT_EQ(strip_reasoning("a</think>b</think>  c  "), "c");
  EXPECT_EQ(strip_reasoning("x<|begin_of_solution|> y </think> z"), "z");
  EXPECT_EQ(strip_reasoning("  plain  "), "  plain  ");
}

TEST(RewardCodeCases, BaseImportsIsRollsPrelude) {
  const std::string_view b = base_imports();
  for (const char* m : {"string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random",
                        "statistics", "itertools", "functools", "operator", "io", "sys", "json"}) {
    EXPECT_NE(b.find(std::string("from ") + m + " import *\n"), std::string::npos) << m;
    EXPECT_NE(b.find(std::string("\nimport ") + m + "\n"), std::string::npos) << m;
  }
  EXPECT_NE(b.find("from builtins import *\n"), std::string::npos);
  EXPECT_NE(b.find("from typing import *\n"), std::string::npos);
  EXPECT_NE(b.find("sys.setrecursionlimit(6*10**5)\n"), std::string::npos);
}

TEST(RewardCodeCases, AssertProgramAndPytestRunner) {
  const std::string p = assert_program("def f(x):\n    return x", "assert f(1) == 1");
  EXPECT_EQ(p.rfind(std::string(base_imports()), 0), 0u);
  EXPECT_NE(p.find("def f(x):\n    return x\nassert f(1) == 1"), std::string::npos);
  EXPECT_EQ(pytest_runner("assert f(1) == 1"), "");
  const std::string runner = pytest_runner(
      "import pytest\ndef test_one():\n    assert f(1) == 1\n\nclass TestMore:\n    def test_two(self):\n"
      "        assert f(2) == 2\ndef test_three():\n    assert True\n");
  EXPECT_NE(runner.find("for _roll_test in (test_one, TestMore, test_three, ):"), std::string::npos) << runner;
}

TEST(RewardCodeCases, CheckBasedProgramsOnePerAssertLine) {
  const json tc = {{"assert_code", "def check(candidate):\n    assert candidate(1) == 2\n\n    assert candidate(2) == 3\n"},
                   {"entry_point", "inc"},
                   {"import_prefix", "from __future__ import annotations\n"}};
  const auto programs = check_based_programs("def inc(x):\n    return x + 1", tc);
  ASSERT_EQ(programs.size(), 2u);
  const std::string head = "from __future__ import annotations\n" + std::string(base_imports()) + "def inc(x):\n    return x + 1";
  EXPECT_EQ(programs[0], head + "\ndef check(candidate):\n    assert candidate(1) == 2\ncheck(inc)");
  EXPECT_EQ(programs[1], head + "\ndef check(candidate):\n    assert candidate(2) == 3\ncheck(inc)");
  // One line: one program; entry point defaults to "candidate".
  const auto single = check_based_programs("x = 1", json{{"assert_code", "check = lambda c: None"}});
  ASSERT_EQ(single.size(), 1u);
  EXPECT_NE(single[0].find("\ncheck = lambda c: None\ncheck(candidate)"), std::string::npos);
  EXPECT_THROW(check_based_programs("x", json{{"entry_point", "f"}}), roll::Error);
  EXPECT_THROW(check_based_programs("x", json{{"assert_code", "\n\n"}}), roll::Error);
}

TEST(RewardCodeCases, TextProgramQuotesTheResponse) {
  EXPECT_EQ(text_program("hi there", "assert {response}.startswith('hi')\nassert len({response}) == 8"),
            std::string(base_imports()) + "\nassert '''hi there'''.startswith('hi')\nassert len('''hi there''') == 8\n");
}

TEST(RewardCodeCases, ParsesBothStdinStdoutForms) {
  IoCases a = parse_io_cases(json{{"inputs", {"1 2\n", "3 4\n"}}, {"outputs", {"3\n", "7\n"}}, {"fn_name", ""}}, "");
  EXPECT_EQ(a.inputs, (std::vector<std::string>{"1 2\n", "3 4\n"}));
  EXPECT_EQ(a.outputs, (std::vector<std::string>{"3\n", "7\n"}));
  EXPECT_EQ(a.fn_name, "");
  IoCases b = parse_io_cases(json::array({{{"stdin", "5"}, {"expected_stdout", "25"}}}), "None");
  EXPECT_EQ(b.inputs, std::vector<std::string>{"5"});
  EXPECT_EQ(b.fn_name, "");
  IoCases c = parse_io_cases(json{{"inputs", {"[1, 2]"}}, {"outputs", {"3"}}, {"fn_name", "None"}}, "");
  EXPECT_EQ(c.fn_name, "");
  IoCases d = parse_io_cases(json{{"inputs", {"[1, 2]"}}, {"outputs", {"3"}}}, "sumList");
  EXPECT_EQ(d.fn_name, "sumList");
  IoCases e = parse_io_cases(json::array({{{"input", "1"}, {"output", "2"}}}), "");
  EXPECT_EQ(e.outputs, std::vector<std::string>{"2"});
  EXPECT_THROW(parse_io_cases(json{{"inputs", {"1"}}, {"outputs", json::array()}}, ""), roll::Error);
  EXPECT_THROW(parse_io_cases(json{{"inputs", {"1"}}}, ""), roll::Error);
  EXPECT_THROW(parse_io_cases(json::array({1, 2}), ""), roll::Error);
  EXPECT_THROW(parse_io_cases(json(3), ""), roll::Error);
}

TEST(RewardCodeCases, OutputsMatchLikeLiveCodeBench) {
  EXPECT_TRUE(outputs_match("3\n", "3"));
  EXPECT_TRUE(outputs_match("  1 2  \r\n3 \n\n", "1 2\n3"));
  EXPECT_TRUE(outputs_match("", "\n"));
  EXPECT_TRUE(outputs_match("0.50 1e2 -0", "0.5 100 0"));
  EXPECT_TRUE(outputs_match("1.000\t2", "1 2.0"));
  EXPECT_TRUE(outputs_match("1_000", "1000"));
  EXPECT_TRUE(outputs_match("Infinity", "inf"));
  EXPECT_FALSE(outputs_match("1 2", "1  2\n3"));
  EXPECT_FALSE(outputs_match("abc", "abd"));
  EXPECT_FALSE(outputs_match("0.333", "0.3333"));
  EXPECT_FALSE(outputs_match("1 2", "1 2 3"));
  EXPECT_FALSE(outputs_match("1 2", "12"));
  EXPECT_FALSE(outputs_match("nan", "NaN"));
  EXPECT_FALSE(outputs_match("1e", "1"));
  EXPECT_FALSE(outputs_match("yes", "YES"));
}

// Real runs: every case type, right and wrong answers, ROLL's error classes.
class RewardCodeSandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = Sandbox::unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "sandbox unavailable: " << reason;
    CodeRewardOptions o;
    o.timeout_s = 5;
    reward_ = std::make_unique<CodeSandboxReward>(sandbox_, o);
  }
  CodeRewardResult score(const std::string& response, const json& tests, const std::string& type,
                         const std::string& fn = "") {
    return reward_->compute(response, tests, type, fn);
  }
  Sandbox sandbox_;
  std::unique_ptr<CodeSandboxReward> reward_;
};

namespace {
const std::string kAdd = "<think>I should add.</think>\n```python\ndef add(a, b):\n    return a + b\n```";
const std::string kSub = "```python\ndef add(a, b):\n    return a - b\n```";
}  // namespace

TEST_F(RewardCodeSandboxTest, AssertCases) {
  const json tests = json::array({{{"assert_code", "assert add(1, 2) == 3"}}, {{"assert_code", "assert add(-1, 1) == 0"}}});
  CodeRewardResult ok = score(kAdd, tests, "assert");
  EXPECT_EQ(ok.score, 1.0) << ok.error;
  EXPECT_EQ(ok.error_class, CodeErrorClass::none);
  EXPECT_EQ(ok.error_message, "Succeed");
  EXPECT_EQ(ok.pass_ratio, 1.0);
  EXPECT_EQ(ok.cases_passed, 2);
  EXPECT_EQ(ok.code, "def add(a, b):\n    return a + b");

  CodeRewardResult wrong = score(kSub, tests, "assert");
  EXPECT_EQ(wrong.score, 0.0);
  EXPECT_EQ(wrong.error_class, CodeErrorClass::wrong_answer);
  EXPECT_EQ(wrong.error_message, "Wrong Answer");
  EXPECT_EQ(wrong.pass_ratio, 0.0);
  EXPECT_EQ(wrong.cases_passed, 0);

  CodeRewardResult syntax = score("```python\ndef add(a, b)\n    return a + b\n```", tests, "assert");
  EXPECT_EQ(syntax.score, 0.0);
  EXPECT_EQ(syntax.error_class, CodeErrorClass::compilation);

  CodeRewardResult runtime = score("```python\ndef add(a, b):\n    return a / 0\n```", tests, "assert");
  EXPECT_EQ(runtime.score, 0.0);
  EXPECT_EQ(runtime.error_class, CodeErrorClass::runtime);
  EXPECT_NE(runtime.error.find("ZeroDivisionError"), std::string::npos) << runtime.error;

  // test_cases as the JSON string a dataset stores, and bare strings as cases.
  EXPECT_EQ(score(kAdd, json(R"(["assert add(2, 2) == 4"])"), "assert").score, 1.0);
}

TEST_F(RewardCodeSandboxTest, PytestCases) {
  const json tests = json::array({{{"assert_code",
                                    "def test_small():\n    assert add(1, 2) == 3\n\nclass TestBig:\n"
                                    "    def test_big(self):\n        assert add(10**20, 1) == 10**20 + 1\n"}}});
  CodeRewardResult ok = score(kAdd, tests, "pytest");
  EXPECT_EQ(ok.score, 1.0) << ok.error;
  CodeRewardResult wrong = score(kSub, tests, "pytest");
  EXPECT_EQ(wrong.score, 0.0);
  EXPECT_EQ(wrong.error_class, CodeErrorClass::wrong_answer);
  // A test class alone is run too (never passes by running nothing).
  const json only_class = json::array({"class TestX:\n    def test_x(self):\n        assert add(1, 1) == 3\n# def test_"});
  EXPECT_EQ(score(kAdd, only_class, "assert").score, 0.0);
}

TEST_F(RewardCodeSandboxTest, CheckBasedCases) {
  const json tests = json::array({{{"assert_code",
                                    "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n"
                                    "    assert candidate(0, 5) == 5\n"},
                                   {"entry_point", "add"}}});
  CodeRewardResult ok = score(kAdd, tests, "check_based");
  EXPECT_EQ(ok.score, 1.0) << ok.error;
  EXPECT_EQ(ok.pass_ratio, 1.0);
  EXPECT_EQ(ok.cases_total, 3);
  // add = a * b - a + 1 ... passes (2,2) only: every line runs, the ratio says how many passed.
  CodeRewardResult partial = score("```python\ndef add(a, b):\n    return a * b\n```", tests, "check_based");
  EXPECT_EQ(partial.score, 0.0);
  EXPECT_EQ(partial.error_class, CodeErrorClass::wrong_answer);
  EXPECT_NEAR(partial.pass_ratio, 1.0 / 3.0, 1e-12);
  EXPECT_EQ(partial.cases_passed, 1);
  // Entry point "candidate" by default.
  const json by_default = json::array({{{"assert_code", "def check(f):\n    assert f(3) == 9"}}});
  EXPECT_EQ(score("```python\ndef candidate(x):\n    return x * x\n```", by_default, "check_based").score, 1.0);
}

TEST_F(RewardCodeSandboxTest, StdinStdoutCases) {
  const std::string sum =
      "```python\nimport sys\na, b = map(int, sys.stdin.read().split())\nprint(a + b)\nprint('  ')\n```";
  const json tests = {{"inputs", {"1 2\n", "10 -3\n"}}, {"outputs", {"3\n", "7"}}, {"fn_name", ""}};
  CodeRewardResult ok = score(sum, tests, "");
  EXPECT_EQ(ok.score, 1.0) << ok.error;
  EXPECT_EQ(ok.cases_passed, 2);
  // ROLL's list form.
  EXPECT_EQ(score(sum, json::array({{{"stdin", "2 2"}, {"expected_stdout", "4.0"}}}), "stdin").score, 1.0);
  // `if __name__ == "__main__":` programs run as scripts.
  EXPECT_EQ(score("```python\ndef main():\n    print(int(input()) * 2)\n\nif __name__ == '__main__':\n    main()\n```",
                  json{{"inputs", {"21"}}, {"outputs", {"42"}}}, "")
                .score,
            1.0);

  CodeRewardResult wrong = score(sum, json{{"inputs", {"1 2\n", "2 2\n"}}, {"outputs", {"3", "5"}}}, "");
  EXPECT_EQ(wrong.score, 0.0);
  EXPECT_EQ(wrong.error_class, CodeErrorClass::wrong_answer);
  EXPECT_EQ(wrong.cases_passed, 1);
  EXPECT_NE(wrong.error.find("input 1"), std::string::npos) << wrong.error;

  CodeRewardResult crash = score("```python\nprint(1 // int(input()))\n```", json{{"inputs", {"0"}}, {"outputs", {"0"}}}, "");
  EXPECT_EQ(crash.score, 0.0);
  EXPECT_EQ(crash.error_class, CodeErrorClass::runtime);
}

TEST_F(RewardCodeSandboxTest, CallBasedCases) {
  // (Not "add": BASE_IMPORTS' `from operator import *` defines one.)
  const std::string combine = "```python\ndef combine(a, b):\n    return a + b\n```";
  const json tests = {{"inputs", {"1\n2", "[1, 2]\n[3]"}}, {"outputs", {"3", "[1, 2, 3]"}}, {"fn_name", "combine"}};
  CodeRewardResult ok = score(combine, tests, "");
  EXPECT_EQ(ok.score, 1.0) << ok.error;
  EXPECT_EQ(ok.cases_passed, 2);
  // LeetCode style: a Solution class; tuples count as lists; prints do not disturb the verdict.
  const std::string leet =
      "```python\nclass Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n"
      "        print('debug')\n        seen = {}\n        for i, x in enumerate(nums):\n"
      "            if target - x in seen:\n                return (seen[target - x], i)\n            seen[x] = i\n```";
  const json two_sum = {{"inputs", {"[2, 7, 11, 15]\n9", "[3, 2, 4]\n6"}}, {"outputs", {"[0, 1]", "[1, 2]"}}};
  CodeRewardResult leet_ok = score(leet, two_sum, "", "twoSum");
  EXPECT_EQ(leet_ok.score, 1.0) << leet_ok.error;

  CodeRewardResult wrong = score("```python\ndef combine(a, b):\n    return b + a\n```", tests, "");
  EXPECT_EQ(wrong.score, 0.0);
  EXPECT_EQ(wrong.error_class, CodeErrorClass::wrong_answer);
  EXPECT_EQ(wrong.cases_passed, 1);
  CodeRewardResult missing = score("```python\ndef plus(a, b):\n    return a + b\n```", tests, "");
  EXPECT_EQ(missing.score, 0.0);
  EXPECT_EQ(missing.error_class, CodeErrorClass::runtime);
  CodeRewardResult syntax = score("```python\ndef combine(a, b) return a\n```", tests, "");
  EXPECT_EQ(syntax.error_class, CodeErrorClass::compilation);
  CodeRewardResult raises = score("```python\ndef combine(a, b):\n    raise ValueError('no')\n```", tests, "");
  EXPECT_EQ(raises.error_class, CodeErrorClass::runtime);
  EXPECT_NE(raises.error.find("ValueError"), std::string::npos) << raises.error;
  // A solution that forges a verdict line without the run's secret tag gains nothing.
  CodeRewardResult forged = score(
      "```python\nimport os\ndef combine(a, b):\n    os.write(1, b'@roll-verdict-0@{\"status\": \"ok\"}\\n')\n    os._exit(0)\n```",
      tests, "");
  EXPECT_EQ(forged.score, 0.0);
}

TEST_F(RewardCodeSandboxTest, TextCases) {
  const json tests = json::array({{{"assert_code", "assert 'hello' in {response}.lower()"}}});
  EXPECT_EQ(score("<think>hmm</think>Hello world", tests, "text").score, 1.0);
  CodeRewardResult no = score("Goodbye", tests, "text");
  EXPECT_EQ(no.score, 0.0);
  EXPECT_EQ(no.error_class, CodeErrorClass::wrong_answer);
}

TEST_F(RewardCodeSandboxTest, EmptyUnextractableAndMalformed) {
  CodeRewardResult empty = score("", json::array({"assert True"}), "assert");
  EXPECT_EQ(empty.score, 0.0);
  EXPECT_EQ(empty.error_class, CodeErrorClass::compilation);
  EXPECT_EQ(empty.error_message, "Empty Response");
  CodeRewardResult nothing = score("<think>```python\ndef add(a, b): return a + b\n```</think>   ", json::array({"assert True"}), "assert");
  EXPECT_EQ(nothing.score, 0.0);
  EXPECT_EQ(nothing.error_message, "Extract Response Error");
  CodeRewardResult bad_json = score(kAdd, json("[{not json"), "assert");
  EXPECT_EQ(bad_json.error_class, CodeErrorClass::environment);
  CodeRewardResult no_cases = score(kAdd, json::array(), "assert");
  EXPECT_EQ(no_cases.score, 0.0);
  EXPECT_EQ(no_cases.error_class, CodeErrorClass::environment);
  EXPECT_EQ(score(kAdd, json{{"inputs", json::array()}, {"outputs", json::array()}}, "").error_class,
            CodeErrorClass::environment);
  EXPECT_EQ(score(kAdd, json::array({{{"entry_point", "add"}}}), "check_based").error_class, CodeErrorClass::environment);
  EXPECT_EQ(score(kAdd, json{{"inputs", {"x"}}, {"outputs", {"1"}}, {"fn_name", "add"}}, "").error_class,
            CodeErrorClass::environment);  // an input that is not JSON
}
