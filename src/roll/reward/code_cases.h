#pragma once
// The pure half of ROLL's local code reward (docs/rewards.md, `cal_local_test`): getting the code out of a
// response and turning a sample's test cases into the Python programs the sandbox runs, plus the
// stdout comparison of the stdin/stdout cases. Nothing here runs anything (code_reward.h does).
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace roll::reward {

// ROLL's BASE_IMPORTS: the prelude every program starts with (common stdlib modules, both as
// `from X import *` and `import X`, and a 6e5 recursion limit).
std::string_view base_imports();

// Text after the last "<|begin_of_solution|>", then after the last "</think>", each stripped.
std::string strip_reasoning(std::string_view response);

// Fenced blocks "```lang\n...```" in order (their contents, leading blank lines and trailing
// whitespace trimmed). An unterminated last fence counts as a block only when no block is complete.
std::vector<std::string> fenced_blocks(std::string_view text);

// ROLL's extraction: no "```" -> the whole text (stripped); else the first fenced block containing
// "def ", else the first block; "" when nothing can be taken.
std::string extract_code(std::string_view text);

// assert / pytest: BASE_IMPORTS + code + assert_code, and when assert_code defines `def test_*`
// functions (or `class Test*` with test_* methods) a runner that calls them in order.
std::string assert_program(std::string_view code, std::string_view assert_code);
// The runner alone ("" when assert_code has no `def test_`).
std::string pytest_runner(std::string_view assert_code);

// check_based (test_cases[0] = {assert_code, entry_point = "candidate", import_prefix = ""}): one
// program per non-empty line i >= 1 of assert_code:
//   import_prefix + BASE_IMPORTS + code + "\n" + line0 + "\n" + line_i + "\ncheck(<entry_point>)"
// (a single line gives one program without line_i). Throws roll::Error on a malformed case.
std::vector<std::string> check_based_programs(std::string_view code, const nlohmann::json& test_case);

// text: assert_code with "{response}" replaced by the response in triple quotes, after BASE_IMPORTS.
std::string text_program(std::string_view response, std::string_view assert_code);

// The assert code of one assert/pytest/text case: the case itself when a string, else its
// "assert_code". Throws roll::Error otherwise.
std::string case_assert_code(const nlohmann::json& test_case);

// stdin/stdout cases: LiveCodeBench's {"inputs": [...], "outputs": [...], "fn_name": f} or ROLL's
// list of {"stdin", "expected_stdout"} (also {"input", "output"}). fn_name comes from
// `test_case_function` unless that is empty or "None". Throws roll::Error on malformed cases.
struct IoCases {
  std::vector<std::string> inputs, outputs;
  std::string fn_name;  // non-empty: call-based
};
IoCases parse_io_cases(const nlohmann::json& test_cases, std::string_view test_case_function);

// LiveCodeBench's stdout comparison: both sides stripped and split into lines, each line stripped;
// same number of lines, and each line equal as text or as a list of decimals (0.50 == 0.5, 1e2 == 100).
bool outputs_match(std::string_view got, std::string_view expected);

// The call-based grader run inside the sandbox as main.py: reads {"tag", "fn_name", "inputs",
// "outputs", "timeout"} as JSON from stdin, loads /sandbox/solution.py as a module (instantiating
// `Solution` when the code defines it), calls fn_name with each input's lines parsed as JSON, compares
// with the parsed output (tuples as lists), and prints one line: tag + {"status", ...}; status is ok,
// wrong_answer, runtime_error, timeout, compile_error or bad_case. Prints of the solution are
// discarded.
std::string_view call_based_runner();

}  // namespace roll::reward
