// The math verifier process: every case of tests/data/math_cases.jsonl through the real
// roll-math-verifier helper, plus timeout -> kill -> restart, crash -> restart and a missing helper.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "roll/reward/math/math_verifier.h"

namespace roll::reward {
namespace {

using Clock = std::chrono::steady_clock;

struct Case {
  int line = 0;
  std::string category, gold, answer, verdict;
  AnswerForm form = AnswerForm::kLatex;
  int expected = 0;
};

std::vector<Case> load_cases() {
  std::ifstream in(std::string(ROLL_SOURCE_DIR) + "/tests/data/math_cases.jsonl");
  std::vector<Case> cases;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    Case c;
    c.line = n;
    c.category = j.at("category");
    c.gold = j.at("gold");
    // Long pathological answers are stored as prefix + repeat * count + suffix.
    c.answer = j.value("answer_prefix", std::string()) + j.at("answer").get<std::string>();
    const std::string rep = j.value("answer_repeat", std::string());
    const int count = j.value("answer_repeat_count", 0);
    c.answer.reserve(c.answer.size() + rep.size() * count);
    for (int i = 0; i < count; ++i) c.answer += rep;
    c.answer += j.value("answer_suffix", std::string());
    c.form = j.at("form") == "text" ? AnswerForm::kText : AnswerForm::kLatex;
    c.expected = j.at("expected");
    c.verdict = j.value("verdict", std::string());
    cases.push_back(std::move(c));
  }
  return cases;
}

TEST(RewardMathVerifier, CaseTableCoversEveryFormat) {
  std::vector<Case> cases = load_cases();
  ASSERT_GE(cases.size(), 200u);
  std::map<std::string, int> per_category;
  for (const Case& c : cases) ++per_category[c.category];
  for (const char* cat : {"fraction", "root", "power", "operator", "left_right", "constant", "function",
                          "factorial_binomial", "text", "percent", "mixed_number", "thousands", "scientific", "unit",
                          "set_tuple_interval", "equation", "complex", "multiple", "near_miss", "algebra",
                          "extraction", "pathological"})
    EXPECT_GE(per_category[cat], 4) << cat;
  std::size_t longest = 0;
  for (const Case& c : cases) longest = std::max(longest, c.answer.size());
  EXPECT_GE(longest, 1000000u);
}

TEST(RewardMathVerifier, EveryCaseScoresAsExpectedInTheHelperProcess) {
  MathVerifierOptions opt;
  opt.time_limit = std::chrono::milliseconds(5000);
  MathVerifier verifier(opt);
  std::vector<Case> cases = load_cases();
  int correct = 0;
  for (const Case& c : cases) {
    const auto t0 = Clock::now();
    MathVerifyResult r = verifier.verify(c.gold, c.answer, c.form);
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    const int score = r.verdict == MathVerdict::kCorrect ? 1 : 0;
    correct += score;
    const std::string where = "line " + std::to_string(c.line) + " [" + c.category + "] gold '" + c.gold +
                              "' answer '" + c.answer.substr(0, 80) + "' -> " + std::string(verdict_name(r.verdict)) +
                              ": " + r.detail;
    EXPECT_EQ(score, c.expected) << where;
    if (!c.verdict.empty()) EXPECT_EQ(verdict_name(r.verdict), c.verdict) << where;
    EXPECT_NE(r.verdict, MathVerdict::kTimeout) << where;
    EXPECT_NE(r.verdict, MathVerdict::kError) << where;
    EXPECT_LT(seconds, 2.0) << where;  // well within the per-sample limit, pathological ones included
  }
  const MathVerifierStats s = verifier.stats();
  EXPECT_EQ(s.requests, cases.size());
  EXPECT_EQ(s.correct, static_cast<std::uint64_t>(correct));
  EXPECT_GT(s.refused, 10u);
  EXPECT_GT(s.parse_failures, 3u);
  EXPECT_EQ(s.timeouts, 0u);
  EXPECT_EQ(s.restarts, 0u);  // one helper served every case
}

TEST(RewardMathVerifier, TimeoutKillsAndRestartsTheHelper) {
  MathVerifierOptions opt;
  opt.time_limit = std::chrono::milliseconds(300);
  MathVerifier verifier(opt);
  ASSERT_EQ(verifier.verify("1", "1", AnswerForm::kLatex).verdict, MathVerdict::kCorrect);
  const pid_t first = verifier.helper_pid();
  ASSERT_GT(first, 0);

  const auto t0 = Clock::now();
  MathVerifyResult hang = verifier.debug_request('H');  // the helper spins forever
  const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(hang.verdict, MathVerdict::kTimeout);
  EXPECT_GE(waited, 0.29);
  EXPECT_LT(waited, 2.0);
  EXPECT_EQ(verifier.helper_pid(), -1);
  EXPECT_NE(::kill(first, 0), 0);  // killed and reaped

  MathVerifyResult after = verifier.verify("\\frac{1}{2}", "0.5", AnswerForm::kLatex);
  EXPECT_EQ(after.verdict, MathVerdict::kCorrect) << after.detail;
  EXPECT_GT(verifier.helper_pid(), 0);
  EXPECT_NE(verifier.helper_pid(), first);
  const MathVerifierStats s = verifier.stats();
  EXPECT_EQ(s.timeouts, 1u);
  EXPECT_EQ(s.restarts, 1u);
}

TEST(RewardMathVerifier, CrashScoresZeroAndAnExternalKillIsRetried) {
  MathVerifier verifier;
  MathVerifyResult crash = verifier.debug_request('C');
  EXPECT_EQ(crash.verdict, MathVerdict::kError);
  EXPECT_EQ(verifier.verify("2", "1+1", AnswerForm::kLatex).verdict, MathVerdict::kCorrect);
  // An external kill (OOM killer, operator) between calls: the answer is graded by a fresh helper,
  // not scored 0.
  const pid_t killed = verifier.helper_pid();
  ::kill(killed, SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(verifier.verify("2", "2", AnswerForm::kLatex).verdict, MathVerdict::kCorrect);
  EXPECT_NE(verifier.helper_pid(), killed);
  const MathVerifierStats s = verifier.stats();
  EXPECT_EQ(s.errors, 1u);  // the crash request only
  EXPECT_EQ(s.restarts, 2u);
}

// An answer whose helper dies on both tries is an error verdict (the input is taken to kill it),
// and the next answer still gets a helper.
TEST(RewardMathVerifier, AHelperDyingTwiceIsAnError) {
  MathVerifierOptions opt;
  opt.helper_path = "/bin/false";  // exits at once: every call finds it dead
  MathVerifier verifier(opt);
  MathVerifyResult r = verifier.verify("1", "1", AnswerForm::kLatex);
  EXPECT_EQ(r.verdict, MathVerdict::kError);
  EXPECT_EQ(verifier.stats().errors, 1u);
  EXPECT_EQ(verifier.stats().restarts, 1u);  // two helpers started for the one answer
}

TEST(RewardMathVerifier, MissingHelperIsAnErrorNotACrash) {
  MathVerifierOptions opt;
  opt.helper_path = "/nonexistent/roll-math-verifier";
  MathVerifier verifier(opt);
  MathVerifyResult r = verifier.verify("1", "1", AnswerForm::kLatex);
  EXPECT_EQ(r.verdict, MathVerdict::kError);
  EXPECT_NE(r.detail.find("not found"), std::string::npos);
}

TEST(RewardMathVerifier, ConcurrentCallersAreSerialised) {
  MathVerifier verifier;
  std::vector<std::thread> threads;
  std::atomic<int> correct{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        const std::string n = std::to_string(t * 100 + i);
        if (verifier.verify(n, n + ".0", AnswerForm::kLatex).verdict == MathVerdict::kCorrect) ++correct;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(correct.load(), 40);
  EXPECT_EQ(verifier.stats().restarts, 0u);
}

TEST(RewardMathVerifier, DestructorReapsTheHelper) {
  pid_t pid;
  {
    MathVerifier verifier;
    ASSERT_EQ(verifier.verify("1", "1", AnswerForm::kLatex).verdict, MathVerdict::kCorrect);
    pid = verifier.helper_pid();
  }
  EXPECT_NE(::kill(pid, 0), 0);
}

}  // namespace
}  // namespace roll::reward
