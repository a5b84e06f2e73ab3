// A chat template (the Jinja engine) applied to a conversation, as tokenizer_config.json supplies it
// (data_args.template: native).
#include <nlohmann/json.hpp>

#include "../fuzz_target.h"
#include "roll/model/chat_template.h"

ROLL_FUZZ_TARGET(chat_template) {
  static const nlohmann::ordered_json special = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
  static const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "What is 1+1?"},
    {"role": "assistant", "content": "<think>easy</think>2"},
    {"role": "user", "content": "And 2+2?"}])");
  auto tmpl = roll::model::ChatTemplate::from_source("native", std::string(bytes), special, "fuzz input");
  (void)tmpl.apply(messages, /*add_generation_prompt=*/true);
}
