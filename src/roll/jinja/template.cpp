#include "roll/jinja/template.h"

#include "roll/jinja/lexer.h"
#include "roll/jinja/parser.h"
#include "roll/jinja/render.h"

namespace roll::jinja {

struct Template::Program {
  Body body;
};

Template::Template(std::string_view source, std::string name) : name_(std::move(name)) {
  auto program = std::make_shared<Program>();
  program->body = parse(tokenize(source, name_, LexerOptions{}), name_);
  program_ = std::move(program);
}

std::string Template::render(const ValueDict& context) const { return jinja::render(program_->body, name_, context); }

}  // namespace roll::jinja
