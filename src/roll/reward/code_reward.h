#pragma once
// ROLL's CodeSandboxRewardWorker in local mode (docs/rewards.md, `cal_local_test`): extract the code from a
// response, run the sample's test cases with Debian's python3 in the Sandbox, and score 1 when every
// case passes, else 0. Errors are classified as ROLL does (info only; the score stays 0/1).
#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace roll::reward {

class Sandbox;
struct SandboxResult;

enum class CodeErrorClass : int {
  none = 0,
  compilation = -1,   // empty response, nothing to extract, SyntaxError/IndentationError
  wrong_answer = -2,  // AssertionError, a check() that fails, different output or return value
  runtime = -3,       // any other exception, a signal, time/memory/output limits
  environment = -4,   // malformed test cases, a sandbox that cannot start
  unexpected = -5,    // a bug of ours
};

struct CodeRewardOptions {
  // Per case (per input for stdin/stdout cases, per call for call-based ones). Default as ROLL's:
  // 60 s for check_based, 20 s otherwise. A stdin/stdout sample gets min(timeout * n + 1, 360) s in all.
  std::optional<double> timeout_s;
  double io_total_cap_s = 360;
  double startup_allowance_s = 2;  // added to each process's limit for interpreter start-up
  size_t stdout_cap = 1u << 20;    // raised to 2x the expected output for stdin/stdout cases
};

struct CodeRewardResult {
  double score = 0;  // 1 when all cases pass, else 0
  CodeErrorClass error_class = CodeErrorClass::none;
  std::string error_message;  // ROLL's: Succeed, Empty Response, Extract Response Error, Compilation
                              // Error, Wrong Answer, Runtime Error, Time Limit Exceeded, ...
  std::string error;          // details: stderr tail, failing input, sandbox message
  double pass_ratio = 0;      // check_based: passed / lines; others: 1 or 0 (as ROLL)
  int cases_total = 0;
  int cases_passed = 0;       // cases after the first failure are not run (check_based: after
                              // the first one that had to be killed)
  std::string code;           // the extracted code
};

class CodeSandboxReward {
 public:
  explicit CodeSandboxReward(const Sandbox& sandbox, CodeRewardOptions options = {});

  // `test_cases` as the dataset stores it: a JSON string (parsed) or the parsed value. case_type:
  // "check_based", "assert", "pytest", "text", anything else = stdin/stdout.
  CodeRewardResult compute(std::string_view response, const nlohmann::json& test_cases,
                           std::string_view case_type, std::string_view test_case_function = "") const;

 private:
  const Sandbox& sandbox_;
  CodeRewardOptions options_;
};

std::string_view to_string(CodeErrorClass c);

// How a failed program run counts: sets class, message and detail of `out` (not the score).
void classify_failure(const SandboxResult& run, CodeRewardResult& out);

}  // namespace roll::reward
