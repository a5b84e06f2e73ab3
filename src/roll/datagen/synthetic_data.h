#pragma once
// Synthetic RLVR datasets for `roll data` (docs/data.md): tasks a tiny model can learn and that the
// existing rewards check exactly.
//   arithmetic  add / subtract / multiply two integers of 1..digits digits; ground_truth is the exact
//               result; tag "arithmetic", domain "math_rule" (the math_rule reward reads \boxed{}).
//   code        Python function tasks from a table of templates (reverse a string, fizzbuzz with
//               seeded words and divisors, gcd, rotate a list, ...), each row with `assert` test
//               cases in the format the code_sandbox reward runs (case_type "assert", test_cases the
//               JSON string of [{"assert_code": ...}]) and a reference solution in `solution`; tag
//               "code", domain "code_sandbox".
//   preference  DPO pairs: instruction "What is A + B?" (A, B in 0..99), chosen "The answer is C."
//               with the exact sum, rejected one of "I don't know.", "No idea, sorry." or
//               "Maybe D?" with D a wrong sum; tag "preference" (no domain: the DPO pipeline reads
//               "instruction" and the chosen_key / rejected_key columns).
// Rows are deterministic in the seed (rollcpp's own generator). Train and test are disjoint: a
// problem's split is fixed by a hash of its text (the operation for arithmetic and preference, the
// prompt for code), so no problem of one split appears in the other, whatever the seeds.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace roll::pipeline {

struct SyntheticDataOptions {
  uint64_t seed = 0;
  int64_t n = 100;
  std::string split = "train";  // train | test
  int digits = 2;               // arithmetic: operands of 1..digits digits (1..9)
  bool with_answer = false;     // arithmetic: add the assistant turn "\boxed{answer}" (SFT rows)
};

// roll::Error on a split other than train/test or a negative n.
void check_synthetic_options(const SyntheticDataOptions& options);

// "test" for about one problem key in five, else "train".
std::string split_of(std::string_view problem_key);

// n distinct problems of the split; roll::Error on bad options or when the split has fewer than n
// distinct problems at that many digits.
std::vector<nlohmann::ordered_json> arithmetic_rows(const SyntheticDataOptions& options);
// n rows of the split (prompts may repeat with other test inputs); roll::Error on bad options.
std::vector<nlohmann::ordered_json> code_rows(const SyntheticDataOptions& options);
// n preference pairs of distinct problems of the split, keys instruction, chosen, rejected, tag;
// roll::Error on bad options or when the split has fewer than n distinct problems.
std::vector<nlohmann::ordered_json> preference_rows(const SyntheticDataOptions& options);
// n question/answer rows (keys question, answer \boxed{N}, tag) of arithmetic_rows' problems, for
// the distillation pipeline; the same errors.
std::vector<nlohmann::ordered_json> distill_rows(const SyntheticDataOptions& options);
// The number of code task templates.
int code_task_count();

// One JSON object per line; roll::Error naming the file when it cannot be written.
void write_jsonl(const std::string& path, const std::vector<nlohmann::ordered_json>& rows);

}  // namespace roll::pipeline
