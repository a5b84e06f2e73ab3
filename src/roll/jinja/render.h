#pragma once
// Runs a parsed template against a context. Scopes follow Jinja: each for-loop iteration, macro
// call and with/generation block gets its own (so `set` there does not leak out; namespaces carry
// state across), `if` does not. Provides `loop`, macros, break/continue. Any error, including
// raise_exception(), becomes a TemplateError naming the template line it happened on.
#include <string>

#include "roll/model/jinja_ast.h"
#include "roll/model/jinja_value.h"

namespace roll::model::jinja {

std::string render(const Body& body, const std::string& template_name, const ValueDict& context);

}  // namespace roll::model::jinja
