#pragma once
// The 25 instruction checks of ROLL's IFEval reward (IF_FUNCTIONS_MAP, docs/rewards.md "ifeval"),
// called the way ROLL calls them: the constraint's fields whose names are the function's
// parameters are passed as they are (JSON values standing in for Python's), and anything Python
// would raise on (a missing parameter, a parameter of the wrong type, json.loads failing) is a
// failed check with the reason in `error`. The comparisons follow Python's: N may be an int, a
// float or a bool; a list parameter may also be a string (its characters) or an object (its keys).
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace roll::reward {

struct IfevalCheckResult {
  bool passed = false;
  std::string error;  // non-empty when Python would have raised (the check then fails)
};

// The function names, in ROLL's map order.
const std::vector<std::string>& ifeval_function_names();
bool is_ifeval_function(std::string_view name);

// `text`: the answer text (special tokens removed, after the last </think>); `args`: the
// constraint without func_name (an object). An unknown function is a failed check.
IfevalCheckResult run_ifeval_check(std::string_view func_name, std::string_view text, const nlohmann::json& args);

// The regex sentence split of verify_sentence_constraint: the number of pieces
// re.split(r"(?<!\w\.\w.)(?<![A-Z][a-z]\.)(?<=\.|\?)\s", text) returns.
size_t ifeval_sentence_count(std::string_view text);

// json.loads(text) succeeds: Python's grammar (NaN, Infinity, -Infinity allowed; no control
// characters inside strings; whitespace is space, tab, CR, LF), nesting up to 990 levels (deeper
// input hits Python's recursion limit, which also fails the check).
bool python_json_loads_ok(std::string_view text);

}  // namespace roll::reward
