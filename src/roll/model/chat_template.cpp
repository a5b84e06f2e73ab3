#include "roll/model/chat_template.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "roll/core/error.h"
#include "roll/jinja/json.h"
#include "roll/jinja/template.h"

namespace roll::model {

using jinja::Value;
using jinja::ValueDict;
using jinja::ValueList;

namespace {

// ROLL's fixed formats (roll/utils/prompt.py, roll/datasets/chat_template.py), verbatim so that
// prompts match ROLL's token for token. BASE_CHAT_FORMAT's "\boxed{{}}" really has doubled
// braces: ROLL never formats that string, it only replaces "{{content}}".
constexpr const char* kBaseFormat =
    "A conversation between User and Assistant. The user asks a question, and the Assistant solves it. The "
    "assistant first thinks about the reasoning process in the mind and then provides the user with the answer, "
    "ensuring that the final result in the answer is enclosed in \\boxed{{}}. The reasoning process and answer are "
    "enclosed within '<think>' '</think>' and '<answer>' '</answer>' tags, respectively, i.e., <think> reasoning "
    "process here </think> <answer> answer here </answer>. User: {{content}} Assistant:";
constexpr const char* kEmptyFormat = "<|im_start|>user\n{{content}}<|im_end|>\n<|im_start|>assistant\n";
constexpr const char* kChatmlTemplate =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
constexpr const char* kLongCotSystem =
    "Your role as an assistant involves thoroughly exploring questions through a systematic long thinking process "
    "before providing the final precise and accurate solutions. This requires engaging in a comprehensive cycle of "
    "analysis, summarizing, exploration, reassessment, reflection, backtracing, and iteration to develop "
    "well-considered thinking process. Please structure your response into two main sections: Thought and "
    "Solution. In the Thought section, detail your reasoning process using the specified format: "
    "<|begin_of_thought|> {thought with steps separated with '\\n\\n'} <|end_of_thought|> Each step should include "
    "detailed considerations such as analisying questions, summarizing relevant findings, brainstorming new ideas, "
    "verifying the accuracy of the current steps, refining any errors, and revisiting previous steps. In the "
    "Solution section, based on various attempts, explorations, and reflections from the Thought section, "
    "systematically present the final solution that you deem correct. The solution should remain a logical, "
    "accurate, concise expression style and detail necessary step needed to reach the conclusion, formatted as "
    "follows: <|begin_of_solution|> {final formatted, precise, and clear solution} <|end_of_solution|> Now, try to "
    "solve the following question through the above guidelines:";
constexpr const char* kLongCotUserPrefix = "Return your final response within \\boxed{}. ";

enum class Kind { Tokenizer, Chatml, OneUserTurn };

// What each name does on top of the template it renders.
struct Behaviour {
  const char* name;
  Kind kind;
  std::optional<bool> default_thinking;  // enable_thinking unless `extra` sets it
  std::optional<bool> forced_thinking;   // enable_thinking whatever `extra` says
  const char* suffix;                    // appended after rendering
  bool longcot;                          // default system prompt + \boxed{} prefix on user turns
  const char* one_turn_format;           // base / empty
};

const std::vector<Behaviour>& behaviours() {
  static const std::vector<Behaviour> table = {
      {"native", Kind::Tokenizer, std::nullopt, std::nullopt, "", false, nullptr},
      {"qwen2_5", Kind::Tokenizer, std::nullopt, std::nullopt, "", false, nullptr},
      {"qwen3", Kind::Tokenizer, true, std::nullopt, "", false, nullptr},
      {"native_nonthinking", Kind::Tokenizer, std::nullopt, false, "", false, nullptr},
      {"longCOT_qwen2.5", Kind::Tokenizer, std::nullopt, std::nullopt, "", true, nullptr},
      {"longcot_V3", Kind::Tokenizer, std::nullopt, std::nullopt, "<think>\n", false, nullptr},
      {"chatml", Kind::Chatml, std::nullopt, std::nullopt, "", false, nullptr},
      {"base", Kind::OneUserTurn, std::nullopt, std::nullopt, "", false, kBaseFormat},
      {"empty", Kind::OneUserTurn, std::nullopt, std::nullopt, "", false, kEmptyFormat},
  };
  return table;
}

const Behaviour& behaviour(const std::string& name) {
  for (const Behaviour& b : behaviours())
    if (name == b.name) return b;
  std::string known;
  for (const std::string& n : ChatTemplate::known_names()) known += (known.empty() ? "" : ", ") + n;
  throw roll::Error("unknown chat template '" + name + "' (data_args.template); known templates: " + known);
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw roll::Error("cannot read " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// HF passes the tokenizer's set special tokens to every template (special_tokens_map): strings,
// or AddedToken objects whose "content" is the string; unset (null/empty) ones are left out.
ValueDict special_tokens_of(const nlohmann::ordered_json& config) {
  static const char* const kKeys[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                      "pad_token", "cls_token", "mask_token"};
  auto token_text = [](const nlohmann::ordered_json& t) -> std::optional<std::string> {
    if (t.is_string()) return t.get<std::string>();
    if (t.is_object() && t.contains("content") && t["content"].is_string()) return t["content"].get<std::string>();
    return std::nullopt;
  };
  ValueDict tokens;
  if (!config.is_object()) return tokens;
  for (const char* key : kKeys) {
    if (!config.contains(key)) continue;
    if (auto text = token_text(config[key]); text && !text->empty()) tokens.set(key, Value(*text));
  }
  if (config.contains("additional_special_tokens") && config["additional_special_tokens"].is_array()) {
    ValueList extra;
    for (const auto& t : config["additional_special_tokens"])
      if (auto text = token_text(t)) extra.emplace_back(*text);
    if (!extra.empty()) tokens.set("additional_special_tokens", Value::list(std::move(extra)));
  }
  return tokens;
}

// tokenizer_config.json's chat_template: a string, or a list of {name, template} where HF uses
// the one named "default".
std::optional<std::string> config_template(const nlohmann::ordered_json& config) {
  if (!config.is_object() || !config.contains("chat_template")) return std::nullopt;
  const auto& t = config["chat_template"];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_array())
    for (const auto& entry : t)
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template"))
        return entry["template"].get<std::string>();
  return std::nullopt;
}

}  // namespace

struct ChatTemplate::Impl {
  const Behaviour* behaviour = nullptr;
  std::string name;
  std::optional<jinja::Template> jinja;  // the tokenizer's template, or chatml's
  ValueDict special_tokens;

  // The message list a Jinja template renders (longCOT's rewrite applied).
  ValueList prepare(const Value& messages) const {
    if (!messages.is_list())
      throw roll::Error("chat template '" + name + "': messages must be a list of {role, content} objects, got " +
                        messages.type_name());
    ValueList out = messages.as_list();
    for (const Value& m : out)
      if (!m.is_dict())
        throw roll::Error("chat template '" + name + "': each message must be an object, got " + m.type_name());
    if (!behaviour->longcot) return out;
    if (out.empty()) throw roll::Error("chat template '" + name + "': no messages");
    auto role_of = [](const Value& m) {
      const Value* r = m.as_dict().find("role");
      return r && r->is_string() ? r->as_string() : std::string();
    };
    if (role_of(out[0]) != "system") {
      ValueDict system;
      system.set("role", Value("system"));
      system.set("content", Value(kLongCotSystem));
      out.insert(out.begin(), Value::dict(std::move(system)));
    }
    for (Value& m : out) {
      if (role_of(m) != "user") continue;
      const Value* content = m.as_dict().find("content");
      if (!content || !content->is_string())
        throw roll::Error("chat template '" + name + "': user message content must be a string");
      ValueDict copy = m.as_dict();
      copy.set("content", Value(kLongCotUserPrefix + content->as_string()));
      m = Value::dict(std::move(copy));
    }
    return out;
  }

  std::string one_user_turn(const ValueList& messages) const {
    const Value* role = messages.size() == 1 ? messages[0].as_dict().find("role") : nullptr;
    const Value* content = messages.size() == 1 ? messages[0].as_dict().find("content") : nullptr;
    if (!role || !role->is_string() || role->as_string() != "user" || !content || !content->is_string())
      throw roll::Error("chat template '" + name + "' takes exactly one user message with string content, got " +
                        std::to_string(messages.size()) + " message(s)");
    return replace_all(behaviour->one_turn_format, "{{content}}", content->as_string());
  }

  std::string render(const Value& messages, bool add_generation_prompt, const Value& extra) const {
    const ValueList prepared = prepare(messages);
    if (behaviour->kind == Kind::OneUserTurn) return one_user_turn(prepared);
    if (!extra.is_dict() && !extra.is_none() && !extra.is_undefined())
      throw roll::Error("chat template '" + name + "': extra template variables must be an object");
    ValueDict context;
    context.set("messages", Value::list(prepared));
    context.set("tools", Value::none());
    context.set("documents", Value::none());
    context.set("add_generation_prompt", Value(add_generation_prompt));
    for (const auto& [k, v] : special_tokens.items()) context.set(k, v);
    if (behaviour->default_thinking) context.set("enable_thinking", Value(*behaviour->default_thinking));
    if (extra.is_dict())
      for (const auto& [k, v] : extra.as_dict().items()) context.set(k, v);
    if (behaviour->forced_thinking) context.set("enable_thinking", Value(*behaviour->forced_thinking));
    return jinja->render(context) + behaviour->suffix;
  }
};

ChatTemplate ChatTemplate::from_source(const std::string& name, const std::string& jinja_source,
                                       const nlohmann::ordered_json& special_tokens, const std::string& source_name) {
  auto impl = std::make_shared<Impl>();
  impl->behaviour = &behaviour(name);
  impl->name = name;
  if (impl->behaviour->kind == Kind::Tokenizer) {
    impl->jinja.emplace(jinja_source, source_name);
    impl->special_tokens = special_tokens_of(special_tokens);
  } else if (impl->behaviour->kind == Kind::Chatml) {
    impl->jinja.emplace(kChatmlTemplate, "chatml");
    impl->special_tokens = special_tokens_of(special_tokens);
  }
  return ChatTemplate(std::move(impl));
}

ChatTemplate ChatTemplate::from_tokenizer_config(const std::string& name, const nlohmann::ordered_json& tokenizer_config) {
  const Behaviour& b = behaviour(name);
  std::optional<std::string> source = config_template(tokenizer_config);
  if (b.kind == Kind::Tokenizer && !source)
    throw roll::Error("chat template '" + name +
                      "' uses the tokenizer's chat_template, but tokenizer_config.json has none (use chatml, base "
                      "or empty, or add chat_template.jinja to the model directory)");
  return from_source(name, source.value_or(""), tokenizer_config, "tokenizer_config.json chat_template");
}

ChatTemplate ChatTemplate::from_model_dir(const std::string& name, const std::string& model_dir) {
  const std::filesystem::path dir(model_dir);
  const std::filesystem::path config_path = dir / "tokenizer_config.json";
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  if (std::filesystem::exists(config_path)) {
    try {
      config = nlohmann::ordered_json::parse(read_file(config_path));
    } catch (const nlohmann::json::exception& e) {
      throw roll::Error(config_path.string() + ": invalid JSON: " + e.what());
    }
  }
  const std::filesystem::path jinja_path = dir / "chat_template.jinja";
  if (std::filesystem::exists(jinja_path))
    return from_source(name, read_file(jinja_path), config, jinja_path.string());
  if (!std::filesystem::exists(config_path) && behaviour(name).kind == Kind::Tokenizer)
    throw roll::Error("chat template '" + name + "' needs " + config_path.string() + " or " + jinja_path.string() +
                      ", neither exists");
  return from_tokenizer_config(name, config);
}

const std::vector<std::string>& ChatTemplate::known_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Behaviour& b : behaviours()) out.emplace_back(b.name);
    return out;
  }();
  return names;
}

bool ChatTemplate::is_known(const std::string& name) {
  for (const Behaviour& b : behaviours())
    if (name == b.name) return true;
  return false;
}

const std::string& ChatTemplate::name() const { return impl_->name; }

std::string ChatTemplate::apply(const nlohmann::json& messages, bool add_generation_prompt) const {
  return impl_->render(jinja::from_json(messages), add_generation_prompt, Value::none());
}

std::string ChatTemplate::apply(const nlohmann::json& messages, bool add_generation_prompt,
                                const nlohmann::json& extra) const {
  return impl_->render(jinja::from_json(messages), add_generation_prompt, jinja::from_json(extra));
}

std::string ChatTemplate::apply(const nlohmann::ordered_json& messages, bool add_generation_prompt) const {
  return impl_->render(jinja::from_json(messages), add_generation_prompt, Value::none());
}

std::string ChatTemplate::apply(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                const nlohmann::ordered_json& extra) const {
  return impl_->render(jinja::from_json(messages), add_generation_prompt, jinja::from_json(extra));
}

std::string apply_with_mock_system(const ChatTemplate& chat_template, const nlohmann::ordered_json& messages,
                                   bool add_generation_prompt, bool skip_mock_system_prompt,
                                   const nlohmann::ordered_json& extra) {
  if (!messages.is_array())
    throw roll::Error("chat template '" + chat_template.name() + "': messages must be a list");
  if (messages.empty()) return "";
  nlohmann::ordered_json ext = extra.is_object() ? extra : nlohmann::ordered_json::object();
  if (!ext.contains("enable_thinking")) ext["enable_thinking"] = false;  // ROLL's default here
  const bool system_first = messages[0].is_object() && messages[0].value("role", "") == "system";
  if (system_first || skip_mock_system_prompt) return chat_template.apply(messages, add_generation_prompt, ext);

  const nlohmann::ordered_json mock = nlohmann::ordered_json::array({{{"role", "system"}, {"content", ""}}});
  const std::string prefix = chat_template.apply(mock, false);
  nlohmann::ordered_json with_mock = mock;
  for (const auto& m : messages) with_mock.push_back(m);
  ext.erase("tools");
  const std::string full = chat_template.apply(with_mock, add_generation_prompt, ext);
  if (full.compare(0, prefix.size(), prefix) != 0)
    throw roll::Error("chat template '" + chat_template.name() +
                      "': the rendering with a mock system message does not start with what the template renders for "
                      "the mock system message alone, so it cannot be cut; set skip_mock_system_prompt: true");
  return full.substr(prefix.size());
}

}  // namespace roll::model
