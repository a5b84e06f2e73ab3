#pragma once
// A Jinja template parsed once and rendered many times: the entry point of our Jinja subset,
// sufficient for the chat templates of tokenizer_config.json files (Qwen2.5, Qwen3, QwQ, Llama 3.x
// and similar). It renders with HF's settings: trim_blocks and lstrip_blocks on, the
// loopcontrols extension (break/continue), no autoescaping, tojson as json.dumps(ensure_ascii=False),
// and raise_exception/strftime_now as globals. Syntax and runtime errors are TemplateError
// (error.h) naming the template and line.
#include <memory>
#include <string>
#include <string_view>

#include "roll/jinja/value.h"

namespace roll::jinja {

class Template {
 public:
  explicit Template(std::string_view source, std::string name = "template");
  std::string render(const ValueDict& context) const;
  const std::string& name() const { return name_; }

 private:
  struct Program;
  std::string name_;
  std::shared_ptr<const Program> program_;
};

}  // namespace roll::jinja
