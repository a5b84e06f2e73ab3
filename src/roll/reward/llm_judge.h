#pragma once
// The text side of ROLL's LLMJudgeRewardWorker (docs/rewards.md): the judge's prompt from a template and
// a sample, and the verdict read from the judge's answer. The model that answers lives in the
// reward worker (workers/llm_judge_scorer.h).
//   question  the text after the last "user\n" of the decoded prompt (ROLL), cut at the chat
//             template's end-of-turn marker "<|im_end|>" when one follows (ROLL keeps the marker
//             and the assistant header in the question)
//   template  rewards.<d>.judge_prompt: a name of judge_prompt_names(), or a template text with
//             {question}, {response}, {reference} ({{ and }} for literal braces, as str.format);
//             unset: Qwen2.5-7B-Instruct-RLVR-prompt
//   verdict   1 when the answer (after its last </think>, if any) contains the word "yes" in
//             any case, else 0. ROLL tests `"yes" in output.lower()`, which also scores "eyes"
//             or "yesterday" 1; here the word must stand alone.
#include <string>
#include <string_view>
#include <vector>

namespace roll::reward {

std::string judge_question(std::string_view decoded_prompt);
// The policy's response without the special tokens its decoding keeps (<|endoftext|>,
// <|im_end|>, <pad>), as MathRuleReward cleans it.
std::string judge_response(std::string_view decoded_response);

const std::vector<std::string>& judge_prompt_names();
// The template text of `judge_prompt` (a known name or a template); roll::Error naming `key` when
// it is neither a known name nor a text with {response}.
std::string judge_template(const std::string& judge_prompt, const std::string& key);
// `tmpl` with its placeholders filled; an unknown {name} is a roll::Error naming it.
std::string fill_judge_template(std::string_view tmpl, std::string_view question, std::string_view response,
                                std::string_view reference);

double judge_verdict(std::string_view answer);

}  // namespace roll::reward
