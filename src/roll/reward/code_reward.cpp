#include "roll/reward/code_reward.h"

#include <fmt/format.h>
#include <signal.h>
#include <string.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

#include "roll/core/error.h"
#include "roll/reward/code_cases.h"
#include "roll/reward/sandbox.h"

namespace roll::reward {
namespace {

std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return "";
  size_t begin = text.rfind('\n', end);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return text.substr(begin, end - begin + 1);
}

std::string tail(const std::string& text, size_t n = 800) {
  return text.size() <= n ? text : "..." + text.substr(text.size() - n);
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

void set(CodeRewardResult& out, CodeErrorClass c, std::string message, std::string detail) {
  out.error_class = c;
  out.error_message = std::move(message);
  out.error = std::move(detail);
}

// A JSON string literal of (at most 200 bytes of) `s`, invalid UTF-8 replaced.
std::string json_quoted(const std::string& s) {
  return nlohmann::json(s.substr(0, 200)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string random_tag() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("@roll-verdict-{:016x}{:016x}@", rng(), rng());
}

}  // namespace

std::string_view to_string(CodeErrorClass c) {
  switch (c) {
    case CodeErrorClass::none: return "none";
    case CodeErrorClass::compilation: return "compilation";
    case CodeErrorClass::wrong_answer: return "wrong_answer";
    case CodeErrorClass::runtime: return "runtime";
    case CodeErrorClass::environment: return "environment";
    case CodeErrorClass::unexpected: return "unexpected";
  }
  return "?";
}

void classify_failure(const SandboxResult& run, CodeRewardResult& out) {
  if (!run.started) return set(out, CodeErrorClass::environment, "Environment Error", run.error);
  if (run.timed_out) return set(out, CodeErrorClass::runtime, "Time Limit Exceeded", tail(run.stderr_data));
  if (run.output_truncated && run.killed)
    return set(out, CodeErrorClass::runtime, "Output Limit Exceeded", "stopped after writing past the output cap");
  const std::string last = last_line(run.stderr_data);
  if (starts_with(last, "SyntaxError") || starts_with(last, "IndentationError") || starts_with(last, "TabError"))
    return set(out, CodeErrorClass::compilation, "Compilation Error", tail(run.stderr_data));
  if (starts_with(last, "AssertionError"))
    return set(out, CodeErrorClass::wrong_answer, "Wrong Answer", tail(run.stderr_data));
  if (starts_with(last, "MemoryError"))
    return set(out, CodeErrorClass::runtime, "Memory Limit Exceeded", tail(run.stderr_data));
  if (run.signal != 0)
    return set(out, CodeErrorClass::runtime, "Runtime Error",
               fmt::format("killed by signal {} ({}) {}", run.signal, ::strsignal(run.signal), tail(run.stderr_data)));
  set(out, CodeErrorClass::runtime, "Runtime Error",
      run.stderr_data.empty() ? fmt::format("exit status {}", run.exit_code) : tail(run.stderr_data));
}

CodeSandboxReward::CodeSandboxReward(const Sandbox& sandbox, CodeRewardOptions options)
    : sandbox_(sandbox), options_(options) {}

CodeRewardResult CodeSandboxReward::compute(std::string_view response, const nlohmann::json& test_cases_in,
                                            std::string_view case_type, std::string_view test_case_function) const {
  CodeRewardResult out;
  if (response.empty()) {
    set(out, CodeErrorClass::compilation, "Empty Response", "");
    return out;
  }
  try {
    const std::string text = strip_reasoning(response);
    nlohmann::json tests;
    try {
      tests = test_cases_in.is_string() ? nlohmann::json::parse(test_cases_in.get<std::string>()) : test_cases_in;
    } catch (const nlohmann::json::exception& e) {
      set(out, CodeErrorClass::environment, "Environment Error", fmt::format("test_cases are not JSON: {}", e.what()));
      return out;
    }
    const bool is_text = case_type == "text";
    if (!is_text) {
      out.code = extract_code(text);
      if (out.code.find_first_not_of(" \t\r\n") == std::string::npos) {
        set(out, CodeErrorClass::compilation, "Extract Response Error", "no code found in the response");
        return out;
      }
    }
    const bool check_based = case_type == "check_based";
    const double timeout = options_.timeout_s.value_or(check_based ? 60.0 : 20.0);
    const double per_process = timeout + options_.startup_allowance_s;

    // Runs `programs` in order; all must exit 0. stop_early: ROLL's break after the first failure
    // (assert cases). check_based runs every line as ROLL does, except after a program had to be
    // killed: the rest would most likely cost a full time limit each.
    auto run_all = [&](const std::vector<std::string>& programs, bool stop_early) {
      out.cases_total = static_cast<int>(programs.size());
      bool failed = false;
      for (const auto& program : programs) {
        SandboxResult r = sandbox_.run_python(program, "", per_process);
        if (r.ok()) {
          ++out.cases_passed;
          continue;
        }
        if (!failed) classify_failure(r, out);
        failed = true;
        if (stop_early || !r.started || r.killed) break;
      }
      return !failed;
    };

    if (check_based) {
      if (!tests.is_object() && (!tests.is_array() || tests.empty()))
        throw Error("check_based test_cases must be a non-empty list");
      const nlohmann::json& first = tests.is_object() ? tests : tests[0];
      const bool all = run_all(check_based_programs(out.code, first), /*stop_early=*/false);
      out.pass_ratio = out.cases_total ? static_cast<double>(out.cases_passed) / out.cases_total : 0.0;
      out.score = all ? 1.0 : 0.0;
    } else if (case_type == "assert" || case_type == "pytest" || is_text) {
      if (!tests.is_array() || tests.empty()) throw Error(fmt::format("{} test_cases must be a non-empty list", case_type));
      std::vector<std::string> programs;
      for (const auto& c : tests)
        programs.push_back(is_text ? text_program(text, case_assert_code(c)) : assert_program(out.code, case_assert_code(c)));
      const bool all = run_all(programs, /*stop_early=*/true);
      out.pass_ratio = all ? 1.0 : 0.0;
      out.score = all ? 1.0 : 0.0;
    } else {
      const IoCases io = parse_io_cases(tests, test_case_function);
      if (io.inputs.empty()) throw Error("stdin/stdout test_cases have no inputs");
      out.cases_total = static_cast<int>(io.inputs.size());
      const double total = std::min(timeout * io.inputs.size() + 1.0, options_.io_total_cap_s);
      size_t longest = 0;
      for (const auto& o : io.outputs) longest = std::max(longest, o.size());
      const std::string solution = std::string(base_imports()) + "\n" + out.code + "\n";
      bool all = false;
      if (!io.fn_name.empty()) {
        // Call-based: one process grades every input (LiveCodeBench's grade_call_based).
        const std::string tag = random_tag();
        const nlohmann::json payload = {{"tag", tag}, {"fn_name", io.fn_name}, {"inputs", io.inputs},
                                        {"outputs", io.outputs}, {"timeout", timeout}};
        SandboxResult r = sandbox_.run_python(std::string(call_based_runner()), payload.dump(),
                                              total + options_.startup_allowance_s,
                                              {{"solution.py", solution}});
        nlohmann::json verdict;
        for (size_t at = r.stdout_data.find(tag); at != std::string::npos; at = r.stdout_data.find(tag, at + 1)) {
          const size_t nl = r.stdout_data.find('\n', at);
          verdict = nlohmann::json::parse(r.stdout_data.substr(at + tag.size(), nl == std::string::npos ? std::string::npos : nl - at - tag.size()),
                                          nullptr, /*allow_exceptions=*/false);
          break;
        }
        const std::string status = verdict.is_object() ? verdict.value("status", "") : "";
        const int index = verdict.is_object() ? verdict.value("index", 0) : 0;
        const std::string detail = verdict.is_object() ? verdict.dump() : "";
        if (status == "ok") {
          all = true;
          out.cases_passed = out.cases_total;
        } else if (status == "wrong_answer") {
          out.cases_passed = index;
          set(out, CodeErrorClass::wrong_answer, "Wrong Answer", detail);
        } else if (status == "compile_error") {
          set(out, CodeErrorClass::compilation, "Compilation Error", detail);
        } else if (status == "timeout") {
          out.cases_passed = index;
          set(out, CodeErrorClass::runtime, "Time Limit Exceeded", detail);
        } else if (status == "runtime_error") {
          out.cases_passed = index;
          set(out, CodeErrorClass::runtime, "Runtime Error", detail);
        } else if (status == "bad_case") {
          set(out, CodeErrorClass::environment, "Environment Error", detail);
        } else if (r.ok()) {
          set(out, CodeErrorClass::runtime, "Runtime Error", "the grader gave no verdict (the solution exited early)");
        } else {
          classify_failure(r, out);
        }
      } else {
        // stdin/stdout: one process per input, stdout compared line by line.
        const auto t0 = std::chrono::steady_clock::now();
        all = true;
        for (size_t i = 0; i < io.inputs.size(); ++i) {
          const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          const double left = total - spent;
          if (left <= 0) {
            set(out, CodeErrorClass::runtime, "Time Limit Exceeded", fmt::format("the sample's {} s ran out at input {}", total, i));
            all = false;
            break;
          }
          SandboxRequest req;
          req.argv = {sandbox_.options().python, "-I", "-B", "/sandbox/main.py"};
          req.files = {{"main.py", solution}};
          req.stdin_data = io.inputs[i];
          req.timeout_s = std::min(timeout, left) + options_.startup_allowance_s;
          req.stdout_cap = std::max(options_.stdout_cap, 2 * io.outputs[i].size() + 4096);
          SandboxResult r = sandbox_.run(req);
          // A jail killed from outside says nothing about the solution: it runs once more.
          if (r.jail_killed) r = sandbox_.run(req);
          if (!r.ok()) {
            classify_failure(r, out);
            out.error = fmt::format("input {}: {}", i, out.error);
            all = false;
            break;
          }
          if (!outputs_match(r.stdout_data, io.outputs[i])) {
            set(out, CodeErrorClass::wrong_answer, "Wrong Answer",
                fmt::format("input {}: expected {}, got {}", i, json_quoted(io.outputs[i]), json_quoted(r.stdout_data)));
            all = false;
            break;
          }
          ++out.cases_passed;
        }
      }
      out.pass_ratio = all ? 1.0 : 0.0;
      out.score = all ? 1.0 : 0.0;
    }
  } catch (const Error& e) {
    out.score = 0;
    out.pass_ratio = 0;
    set(out, CodeErrorClass::environment, "Environment Error", fmt::format("malformed test cases: {}", e.what()));
    return out;
  } catch (const std::exception& e) {
    out.score = 0;
    out.pass_ratio = 0;
    set(out, CodeErrorClass::unexpected, "Unexpected Error", e.what());
    return out;
  }
  if (out.score == 1.0) set(out, CodeErrorClass::none, "Succeed", "");
  return out;
}

}  // namespace roll::reward
