#include "roll/reward/llm_judge.h"

#include <fmt/format.h>

#include <cctype>

#include "roll/core/error.h"

namespace roll::reward {
namespace {

// Our wording of the YES/NO instructions that ROLL's Qwen2.5-7B-Instruct-RLVR-prompt gives the
// judge (a generative verifier trained to answer YES or NO).
constexpr const char* kRlvrPrompt =
    "Given a problem, decide whether the final answer of the provided (possibly incomplete) solution matches the "
    "reference answer. The reference answer may be an option letter (A, B, C, D), a number, an expression, or a "
    "list of answers when there are several questions; judge the meaning, whatever the language.\n"
    "- If the final answer matches the reference answer, output YES.\n"
    "- If it does not match, output NO.\n"
    "- If the solution is unclear, incomplete or ambiguous, treat it as wrong and output NO.\n"
    "Output exactly YES or NO, with no other words, punctuation or explanation.\n\n"
    "Question:\n{question}\n\n"
    "Solution (final step):\n{response}\n\n"
    "Reference answer:\n{reference}\n\n"
    "Output:";

bool is_letter(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::string judge_question(std::string_view prompt) {
  const size_t user = prompt.rfind("user\n");
  std::string_view q = user == std::string_view::npos ? prompt : prompt.substr(user + 5);
  const size_t end = q.find("<|im_end|>");
  if (end != std::string_view::npos) q = q.substr(0, end);
  return std::string(q);
}

std::string judge_response(std::string_view r) {
  std::string out(r);
  for (const std::string_view token : {"<|endoftext|>", "<|im_end|>", "<pad>"})
    for (size_t at = out.find(token); at != std::string::npos; at = out.find(token, at)) out.erase(at, token.size());
  return out;
}

const std::vector<std::string>& judge_prompt_names() {
  static const std::vector<std::string> names = {"Qwen2.5-7B-Instruct-RLVR-prompt"};
  return names;
}

std::string judge_template(const std::string& judge_prompt, const std::string& key) {
  if (judge_prompt.empty() || judge_prompt == "Qwen2.5-7B-Instruct-RLVR-prompt") return kRlvrPrompt;
  if (judge_prompt.find("{response}") != std::string::npos) return judge_prompt;
  std::string known;
  for (const auto& n : judge_prompt_names()) known += (known.empty() ? "" : ", ") + n;
  throw ConfigError(key, fmt::format("{}: '{}' is neither a known judge prompt ({}) nor a template with {{response}}",
                                     key, judge_prompt, known));
}

std::string fill_judge_template(std::string_view t, std::string_view question, std::string_view response,
                                std::string_view reference) {
  std::string out;
  out.reserve(t.size() + question.size() + response.size() + reference.size());
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if ((c == '{' || c == '}') && i + 1 < t.size() && t[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    const size_t close = t.find('}', i);
    if (close == std::string_view::npos) throw Error(fmt::format("judge prompt: '{{' at offset {} is never closed", i));
    const std::string_view name = t.substr(i + 1, close - i - 1);
    if (name == "question") out += question;
    else if (name == "response") out += response;
    else if (name == "reference") out += reference;
    else
      throw Error(fmt::format("judge prompt: unknown placeholder {{{}}} (known: {{question}}, {{response}}, {{reference}})",
                              name));
    i = close;
  }
  return out;
}

double judge_verdict(std::string_view answer) {
  const size_t think = answer.rfind("</think>");
  if (think != std::string_view::npos) answer = answer.substr(think + 8);
  for (size_t i = 0; i + 3 <= answer.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(answer[i])) != 'y' ||
        std::tolower(static_cast<unsigned char>(answer[i + 1])) != 'e' ||
        std::tolower(static_cast<unsigned char>(answer[i + 2])) != 's')
      continue;
    const bool starts = i == 0 || !is_letter(answer[i - 1]);
    const bool ends = i + 3 == answer.size() || !is_letter(answer[i + 3]);
    if (starts && ends) return 1.0;
  }
  return 0.0;
}

}  // namespace roll::reward
