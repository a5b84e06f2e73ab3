#include "roll/model/jinja_template.h"

#include "roll/model/jinja_lexer.h"
#include "roll/model/jinja_parser.h"
#include "roll/model/jinja_render.h"

namespace roll::model::jinja {

struct Template::Program {
  Body body;
};

Template::Template(std::string_view source, std::string name) : name_(std::move(name)) {
  auto program = std::make_shared<Program>();
  program->body = parse(tokenize(source, name_, LexerOptions{}), name_);
  program_ = std::move(program);
}

std::string Template::render(const ValueDict& context) const { return jinja::render(program_->body, name_, context); }

}  // namespace roll::model::jinja
