#pragma once
// Chat templates as ROLL applies them (DataArguments.template, roll/datasets/chat_template.py).
// Each name turns a message list into prompt text:
//   native, qwen2_5     the tokenizer's own chat_template (tokenizer_config.json, or the
//                       chat_template.jinja file beside it)
//   qwen3               the same with enable_thinking=True unless `extra` sets it
//   native_nonthinking  the same with enable_thinking=False, always
//   longcot_V3          the tokenizer's template, then "<think>\n" appended
//   longCOT_qwen2.5     the tokenizer's template after ROLL's long-CoT system prompt is added (when
//                       the first message is not a system one) and every user turn is prefixed
//                       with "Return your final response within \boxed{}. "
//   chatml              "<|im_start|>{role}\n{content}<|im_end|>\n" per message, then
//                       "<|im_start|>assistant\n" when a generation prompt is asked for
//   base                ROLL's R1-style prompt around exactly one user message: "A conversation
//                       between User and Assistant. ... User: {content} Assistant:"
//   empty               "<|im_start|>user\n{content}<|im_end|>\n<|im_start|>assistant\n" around
//                       exactly one user message
// A Jinja template sees what HF's apply_chat_template passes: messages, tools (None unless
// `extra` gives them), documents=None, add_generation_prompt, the special tokens of
// tokenizer_config.json (bos_token, eos_token, ...), then every key of `extra` (enable_thinking,
// tools, date_string, ...). Pass nlohmann::ordered_json to keep the key order of tool schemas and
// arguments: `tojson` prints it, so it changes the prompt.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace roll::model {

class ChatTemplate {
 public:
  // An unknown `name` is a roll::Error naming it and listing the known names; a name that needs
  // the tokenizer's template when there is none is a roll::Error too.
  static ChatTemplate from_tokenizer_config(const std::string& name, const nlohmann::ordered_json& tokenizer_config);
  // Reads <model_dir>/tokenizer_config.json and, when present, <model_dir>/chat_template.jinja
  // (which wins, as in HF).
  static ChatTemplate from_model_dir(const std::string& name, const std::string& model_dir);
  // `jinja_source` stands for the tokenizer's template; `special_tokens` is an object such as
  // {"bos_token": "<|begin_of_text|>"}; `source_name` names the template in errors.
  static ChatTemplate from_source(const std::string& name, const std::string& jinja_source,
                                  const nlohmann::ordered_json& special_tokens, const std::string& source_name);

  static const std::vector<std::string>& known_names();
  static bool is_known(const std::string& name);

  // `messages`: a list of {role, content, ...} objects; `extra`: an object of further template
  // variables (or null). Template errors (raise_exception included) are roll::Error naming the
  // template line. Copies share the parsed template; apply may run on several threads at once.
  std::string apply(const nlohmann::json& messages, bool add_generation_prompt) const;
  std::string apply(const nlohmann::json& messages, bool add_generation_prompt, const nlohmann::json& extra) const;
  std::string apply(const nlohmann::ordered_json& messages, bool add_generation_prompt) const;
  std::string apply(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                    const nlohmann::ordered_json& extra) const;

  const std::string& name() const;

 private:
  struct Impl;
  explicit ChatTemplate(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// ROLL's custom_apply_chat_template (docs/agentic.md), as text. When the first message is a system one,
// the messages are rendered as they are. Otherwise the template is applied to
// [{role: system, content: ""}] + messages and the text it renders for that mock system message
// alone (no generation prompt, no extra) is cut from the front, so that templates which insert a
// default system prompt ("You are Qwen, ...") do not; with skip_mock_system_prompt the messages
// are rendered as they are. As in ROLL, enable_thinking defaults to false here (set it in
// `extra`), and tools reach the template only when the first message is a system one or with
// skip_mock_system_prompt (with a mock system message they would sit in the prefix that is cut).
// A template whose rendering does not start with the mock prefix is a roll::Error suggesting
// skip_mock_system_prompt. No messages give "".
std::string apply_with_mock_system(const ChatTemplate& chat_template, const nlohmann::ordered_json& messages,
                                   bool add_generation_prompt, bool skip_mock_system_prompt,
                                   const nlohmann::ordered_json& extra);

}  // namespace roll::model
