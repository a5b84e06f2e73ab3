// The Jinja subset: rendering checked against Debian's python3-jinja2 run as HF configures it
// (tests/oracles/render_template.py), plus the behaviour that needs no oracle: error locations,
// raise_exception, Python number and JSON formatting, limits.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "jinja_oracle.h"

#include "roll/jinja/error.h"
#include "roll/jinja/json.h"
#include "roll/jinja/python.h"
#include "roll/jinja/template.h"

using namespace roll::jinja;
using ojson = nlohmann::ordered_json;

namespace {


std::string render(const std::string& source, const ojson& context = ojson::object()) {
  return Template(source, "test").render(from_json(context).as_dict());
}

// The TemplateError a render raises (fails the test when it does not raise).
TemplateError error_of(const std::string& source, const ojson& context = ojson::object()) {
  try {
    render(source, context);
  } catch (const TemplateError& e) {
    return e;
  }
  ADD_FAILURE() << "no error from: " << source;
  return TemplateError("test", 0, "");
}

struct Snippet {
  const char* source;
  const char* context;
};

// Each feature the chat templates lean on, in isolation: whitespace control, literals, operators
// and their precedence, slicing, loops, scoping, namespaces, macros, filters, tests, methods,
// Python str()/repr() of values, tojson. Errors only need to be errors on both sides.
const Snippet kSnippets[] = {
    {"{{ 'a' ~ 1 ~ none ~ true }}", "{}"},
    {"{{ 1 + 2 * 3 - 4 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 0.1 + 0.2 }}", "{}"},
    {"{{ 1e16 }} {{ 1e15 }} {{ 1.5e-7 }} {{ 0.0001 }} {{ 123.456 }} {{ -0.0 }} {{ 3.0 }}", "{}"},
    {"{{ [1, 'a', none, true, 2.5, {'k': 'v'}] }}", "{}"},
    {"{{ {'a': 1, 'b': [1,2]} }} {{ \"it's\" }} {{ ['it\\'s', 'q\"'] }}", "{}"},
    {"{{ x[::-1] }}|{{ x[1:] }}|{{ x[:-1] }}|{{ x[::2] }}|{{ x[-2:] }}|{{ s[::-1] }}|{{ s[1:3] }}", "{\"x\": [1, 2, 3, 4, 5], \"s\": \"héllo\"}"},
    {"{{ s[0] }}{{ s[-1] }}{{ x[10] }}{{ s|length }}{{ x|length }}", "{\"s\": \"日本語\", \"x\": [1]}"},
    {"{% for m in ms %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }}|{% endfor %}", "{\"ms\": [\"a\", \"b\", \"c\"]}"},
    {"{% for m in ms %}{{ loop.previtem }}-{{ loop.nextitem }};{% endfor %}", "{\"ms\": [\"a\", \"b\", \"c\"]}"},
    {"{% for m in ms if m != 'b' %}{{ m }}{{ loop.index }}{% else %}empty{% endfor %}", "{\"ms\": [\"a\", \"b\", \"c\"]}"},
    {"{% for m in ms %}{{ m }}{% else %}empty{% endfor %}", "{\"ms\": []}"},
    {"{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}{% for k, v in d|items %}{{ k }}:{{ v }};{% endfor %}", "{\"d\": {\"z\": 1, \"a\": 2}}"},
    {"{% for k in d %}{{ k }}{% endfor %}", "{\"d\": {\"z\": 1, \"a\": 2}}"},
    {"{% set ns = namespace(x=1, y='a') %}{% for i in [1,2,3] %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}{{ ns.y }}", "{}"},
    {"{% set x = 0 %}{% for i in [1,2,3] %}[{{ x }}]{% set x = i %}{% endfor %}<{{ x }}>", "{}"},
    {"{% if a %}A{% elif b %}B{% else %}C{% endif %}", "{\"a\": 0, \"b\": \"\"}"},
    {"{% if a %}A{% elif b %}B{% else %}C{% endif %}", "{\"a\": 0, \"b\": \"x\"}"},
    {"  {% if true %}\n    yes\n  {% endif %}\nafter", "{}"},
    {"a\n  {%- if true -%}\n  b  \n  {%- endif %}\n c", "{}"},
    {"{{- '  x  ' -}}\n\n  {{ 'y' }}  \n{{ 'z' -}}   \n\tw", "{}"},
    {"line1\n{# comment #}\nline2\n  {#- c2 -#}  \nline3\n   {# c3 #}\nline4", "{}"},
    {"x {% if true %}y{% endif %}\n z\n   {%+ if true %}keep{% endif %}\n", "{}"},
    {"{% if true +%}\nkeep newline{% endif %}", "{}"},
    {"{% raw %}{{ not rendered }}{% endraw %} done", "{}"},
    {"{{ x is defined }}{{ y is defined }}{{ x is none }}{{ z is none }}{{ x is string }}{{ 1 is number }}{{ d is mapping }}{{ d is iterable }}{{ y is iterable }}{{ 3 is odd }}{{ 4 is divisibleby 2 }}{{ x is not none }}", "{\"x\": \"s\", \"z\": null, \"d\": {}}"},
    {"{{ 'a' in 'cat' }}{{ 'b' not in 'cat' }}{{ 1 in [1,2] }}{{ 'k' in d }}{{ 'q' in d }}{{ 'x' in undefined_thing }}", "{\"d\": {\"k\": 1}}"},
    {"{{ 'a' if x else 'b' }}{{ 'c' if y }}|{{ x and y }}|{{ x or y }}|{{ not x }}", "{\"x\": 1}"},
    {"{{ '  hi  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ 'Hi'|lower }}{{ 'hi'|upper }}|{{ 'a-b-c'|replace('-', '+') }}|{{ 'a-b-c'|replace('-', '+', 1) }}", "{}"},
    {"{{ x|tojson }}|{{ x|tojson(indent=2) }}|{{ x|tojson(indent=4) }}", "{\"x\": {\"name\": \"f\", \"args\": {\"a\": [1, 2.5, null, true], \"u\": \"日本 \\\"q\\\" \\\\ \\n\\t\"}, \"e\": {}, \"l\": []}}"},
    {"{{ 'a b  c'.split() }}{{ 'a,b,,c'.split(',') }}{{ 'a,b,c'.split(',', 1) }}{{ 'a,b,c'.rsplit(',', 1) }}{{ '  x '.strip() }}|{{ 'xxa'.lstrip('x') }}|{{ 'axx'.rstrip('x') }}|{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x','c')) }}", "{}"},
    {"{{ [3,1,2]|sort }}{{ ['b','A','c']|sort }}{{ [3,1,2]|sort(reverse=true) }}{{ x|first }}{{ x|last }}{{ x|join(', ') }}{{ [1,1,2]|unique|list }}{{ x|reverse|list }}", "{\"x\": [\"a\", \"b\", \"c\"]}"},
    {"{{ y|default('dflt') }}{{ ''|default('e', true) }}{{ none|default('n') }}{{ x|d('q') }}", "{\"x\": 0}"},
    {"{{ '42'|int + 1 }}{{ '4.7'|int }}{{ 'zz'|int }}{{ 3.9|int }}{{ '2.5'|float }}{{ 7|string ~ 'x' }}", "{}"},
    {"{{ ms|selectattr('role', 'equalto', 'user')|map(attribute='content')|join('|') }} {{ ms|rejectattr('role', 'eq', 'user')|list|length }} {{ ms|map(attribute='role')|list }}", "{\"ms\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"assistant\", \"content\": \"b\"}, {\"role\": \"user\", \"content\": \"c\"}]}"},
    {"{{ [1,0,2,none]|select|list }}{{ [1,2,3,4]|reject('odd')|list }}{{ ['a','b']|map('upper')|list }}", "{}"},
    {"{% macro greet(name, punct='!') %}Hello {{ name }}{{ punct }}{% endmacro %}{{ greet('x') }} {{ greet('y', '?') }} {{ greet(name='z') }}", "{}"},
    {"{% macro r(n) %}{% if n > 0 %}{{ n }}{{ r(n - 1) }}{% endif %}{% endmacro %}{{ r(3) }}", "{}"},
    {"{% set ns = namespace(c=0) %}{% macro inc() %}{% set ns.c = ns.c + 1 %}{% endmacro %}{{ inc() }}{{ inc() }}{{ ns.c }}", "{}"},
    {"{% for i in range(5) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %}", "{}"},
    {"{% set x %}block {{ 1 + 1 }}{% endset %}[{{ x }}]", "{}"},
    {"{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a is defined }}", "{}"},
    {"{{ d.keys()|list }}{{ d.values()|list }}{{ d.get('a') }}{{ d.get('zz', 'dflt') }}{{ d['a'] }}{{ d.a }}", "{\"d\": {\"a\": 1, \"b\": 2}}"},
    {"{{ m.tool_calls }}|{{ m.content }}|{% if m.tool_calls %}T{% else %}F{% endif %}{% for t in m.tool_calls %}x{% endfor %}", "{\"m\": {\"content\": \"c\"}}"},
    {"{{ raise_exception('boom ' ~ 1) }}", "{}"},
    {"{{ undefined_var.attr }}", "{}"},
    {"{{ 'a' + 1 }}", "{}"},
    {"{% for x in 5 %}{% endfor %}", "{}"},
    {"{{ x.y.z }}", "{\"x\": {}}"},
    {"{% if %}", "{}"},
    {"{{ 'abc' }", "{}"},
    {"{% for %}{% endif %}", "{}"},
    {"{{ 'a' 'b' }}{{ \"\\u00e9\\n\\x41\\t\" }}", "{}"},
    {"{{ 1 < 2 < 3 }}{{ 3 > 2 > 5 }}{{ 1 == 1.0 }}{{ 'a' != 'b' }}{{ [1,2] == [1,2] }}{{ 2 >= 2 }}{{ 'b' > 'a' }}", "{}"},
    {"{{ -x }}{{ +x }}{{ -x|abs }}{{ not not x }}", "{\"x\": 3}"},
    {"{{ x|length > 2 and x[0] == 'a' }}", "{\"x\": \"abc\"}"},
    {"{% set a, b = [1, 2] %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t|length }}", "{}"},
    {"{{ 'x' * 3 }}{{ [1] * 2 }}{{ [1] + [2] }}", "{}"},
    {"{%- for m in messages -%}\n  {{- m.role }}: {{ m.content | trim }}\n{% endfor -%}", "{\"messages\": [{\"role\": \"u\", \"content\": \" hi \"}, {\"role\": \"a\", \"content\": \"yo\\n\"}]}"},
    {"{{ 'Hello World'.title() }}{{ 'hello'|capitalize }}{{ 'hello world'|title }}", "{}"},
    {"{{ x|dictsort }}{{ x|dictsort(by='value') }}", "{\"x\": {\"b\": 1, \"a\": 2}}"},
    {"{{ 'a\nb\nc'|indent(2) }}|{{ 'a\n\nb'|indent(2, true, true) }}", "{}"},
    {"{% filter upper %}hello {{ 'x' }}{% endfilter %}", "{}"},
    {"{{ loop }}", "{}"},
    {"{% for a in [[1,2],[3,4]] %}{% for b in a %}{{ loop.index }}{{ b }}{% endfor %}{{ loop.index }};{% endfor %}", "{}"},
    {"{{ x.0 }}{{ x[0][1] }}", "{\"x\": [[1, 2]]}"},
    {"{{ 'é'|length }}{{ '😀x'[1] }}{{ 'αβγ'|upper }}", "{}"},
    {"{{ true }}{{ True }}{{ none }}{{ None }}{{ false|string }}", "{}"},
    {"{% generation %}gen {{ 1 }}{% endgeneration %}", "{}"},
    {"{{ 'abc'.find('c') }}{{ 'abcabc'.count('b') }}{{ ', '.join(['a', 'b']) }}{{ 'a b'.replace(' ', '_') }}", "{}"},
    {"{{ x is sequence }}{{ 1 is sequence }}{{ x is string }}{{ y is callable }}{{ 1 is integer }}{{ 1.0 is float }}{{ true is boolean }}{{ true is true }}{{ false is false }}", "{\"x\": [1]}"},
    {"{{ x|items|list }}", "{\"x\": {\"a\": 1}}"},
    {"{{ range(3)|list }}{{ range(1, 7, 2)|list }}{{ dict(a=1) }}", "{}"},
    {"{{ 10 / 4 }}{{ 10 / 5 }}{{ 2.5 * 2 }}{{ 5 - 7.5 }}", "{}"},
    {"{{ a is sameas false }}{{ b is none and a is false }}{{ c is defined if c else 'u' }}", "{\"a\": false, \"b\": null}"},
    {"{{ (1, 2) }}{{ () }}{{ [] }}{{ {} }}", "{}"},
    {"{{ u }}{{ u ~ 'x' }}{{ u|string }}{{ u|length }}", "{}"},
    {"{% set x = [1,2,3] %}{{ x|sum if false else x|length }}", "{}"},
    {"a\r\nb\r\n  {% if 1 %}\r\n  c\r\n  {% endif %}\r\nd\r\n", "{}"},
    {"\t{% if 1 %}tab{% endif %}\n\t  {%- if 1 %}x{% endif %}", "{}"},
    {"a  {%- raw -%}  {{ raw }}  {%- endraw -%}  b", "{}"},
    {"  {% raw %}\n  r\n  {% endraw %}\nafter", "{}"},
    {"{# only comment #}", "{}"},
    {"x\n{# c #}   \ny", "{}"},
    {"{{ 'a' }}\n{{ 'b' }}\n", "{}"},
    {"{% set x = 1 %}\n\n{{ x }}\n\n", "{}"},
    {"{%- set x = 1 -%}\n\n{{ x }}\n\n", "{}"},
    {"\u00a0 {% if 1 %}nbsp{% endif %}", "{}"},
    {"{{ '\u3000x\u3000'|trim }}|{{ ' \u2003y'.strip() }}", "{}"},
    {"{% for i in [1,2] %}\n  {{ i }}\n{% endfor %}\n", "{}"},
    {"<{%- for i in [1,2] -%}\n  {{ i }}\n{%- endfor -%}>", "{}"},
    {"{{- 1 }} {{- 2 -}} {{ 3 }}", "{}"},
    {"{% if 1 %}a{% else %}b{% endif %}\n{% if 0 %}c{% elif 1 %}d{% endif %}\n", "{}"},
    {"{% macro m() -%}\n  body\n{%- endmacro %}[{{ m() }}]", "{}"},
    {"{{ x }}", "{\"x\": 1.0}"},
    {"{{ x }}", "{\"x\": 1e+100}"},
    {"{{ x|tojson }}", "{\"x\": [1.0, 1e-07, 1234567890123, -0.5]}"},
    {"{{ x|tojson }}", "{\"x\": \"tab\\t nl\\n ctrl\\u0001 uni é 😀 quote\\\" bs\\\\ slash/\"}"},
    {"{{ x|tojson(ensure_ascii=true) }}", "{\"x\": \"é 😀\"}"},
    {"{{ x|tojson(separators=(',', ':')) }}{{ x|tojson(sort_keys=true) }}", "{\"x\": {\"b\": 1, \"a\": [1, 2]}}"},
    {"{{ x }}", "{\"x\": {\"a\": \"it's\", \"b\": null, \"c\": [true, 1.5]}}"},
    {"{{ x['items'] }}", "{\"x\": {\"a\": 1, \"items\": 2}}"},
    {"{{ 'abc'|list }}{{ 'a' < 'b' }}{{ [1, 2] < [1, 3] }}", "{}"},
    {"{{ x is none }}{{ x.y is defined }}", "{\"x\": null}"},
    {"{% set ns = namespace(a=[]) %}{% set ns.a = ns.a + [1] %}{% set ns.a = ns.a + [2] %}{{ ns.a }}", "{}"},
    {"{%- set messages = messages[1:] %}{{ messages|length }}{% for m in messages %}{{ m }}{% endfor %}", "{\"messages\": [1, 2, 3]}"},
    {"{% if not x is defined %}{% set x = 'd' %}{% endif %}{{ x }}", "{}"},
    {"{{ 'Use '|safe + '<b>' + ' & '|safe }}{{ ('<i>'|e) ~ '<j>' }}{{ '<k>'|escape|trim }}", "{}"},
    {"{{ '{} and {}'.format(1, 'x') }}{{ '{0}{0}{name}'.format('a', name='b') }}{{ '{{lit}}'.format() }}", "{}"},
    {"{{ [3, 1, 2]|min }}{{ ['b', 'A']|max }}{{ []|min }}", "{}"},
    {"{{ none|selectattr('a')|list }}{{ none|map('upper')|list }}", "{}"},
    {"{{ x|default }}|{{ x|default(none) }}", "{}"},
    {"{% for x in y %}{% endfor %}{{ y.z }}", "{}"},
    {"{{ ['a','b']|join }}{{ [1,2]|join('-') }}{{ users|join(', ', attribute='n') }}", "{\"users\": [{\"n\": \"x\"}, {\"n\": \"y\"}]}"},
    {"{% set a = [1, 2, 3] %}{{ a[1:2] }}{{ a[5:] }}{{ a[-10:2] }}{{ a[::-2] }}{{ a[2:0:-1] }}", "{}"},
    {"{{ loop.index }}", "{}"},
    {"{% for m in ms %}{{ loop.cycle('odd', 'even') }}{% endfor %}", "{\"ms\": [1, 2, 3]}"},
    {"{{ \"a\\\\nb\" }}|{{ 'a\\'b' }}|{{ \"\\101\" }}", "{}"},
    {"{{ 1_000 + 0x10 + 0o10 + 0b10 }}{{ 1_0.5_0 }}", "{}"},
    {"{{ x.split('</think>')[-1].lstrip('\\n') }}|{{ x.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') }}", "{\"x\": \"<think>\\nr\\n</think>\\n\\nans\"}"},
    {"{{ 'a' is lower }}{{ 'A' is upper }}{{ 'x' is in 'xyz' }}{{ 3 is gt 2 }}{{ 2 is le 2 }}", "{}"},
    {"{{ (1 if true else 2) + 3 }}{{ 1 if false else 2 if false else 3 }}", "{}"},
    {"{{ -2 ** 2 }}{{ 2 ** -1 }}{{ 10 % 3 * 2 }}{{ 'x' ~ 1 + 2 }}", "{}"},
    {"{{ not 1 == 2 }}{{ not 'a' in 'b' }}{{ 1 in [1] and 2 not in [1] }}", "{}"},
};

}  // namespace

TEST(JinjaOracle, SnippetsRenderAsPythonJinja) {
  ojson cases = ojson::array();
  for (const Snippet& s : kSnippets) cases.push_back({{"source", s.source}, {"context", ojson::parse(s.context)}});
  const auto expected = roll::testing::run_jinja_oracle(cases);
  if (!expected) GTEST_SKIP() << "/usr/bin/python3 with jinja2 (python3-jinja2) is not installed";
  ASSERT_EQ(expected->size(), cases.size());
  int rendered = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const ojson& want = (*expected)[i];
    SCOPED_TRACE(std::string("template: ") + kSnippets[i].source + "\ncontext: " + kSnippets[i].context);
    std::optional<std::string> got;
    std::string error;
    try {
      got = render(kSnippets[i].source, cases[i]["context"]);
    } catch (const TemplateError& e) {
      error = e.what();
    }
    if (want.contains("text")) {
      ASSERT_TRUE(got.has_value()) << "we raised: " << error;
      EXPECT_EQ(*got, want["text"].get<std::string>());
      ++rendered;
    } else {
      EXPECT_FALSE(got.has_value()) << "Python raised " << want["error"] << ", we rendered: " << got.value_or("");
    }
  }
  EXPECT_GT(rendered, 100);
}

TEST(Jinja, SyntaxErrorsNameTheLine) {
  const TemplateError e = error_of("line one\n{% if x %}\n{{ 1 + }}\n{% endif %}");
  EXPECT_EQ(e.line(), 3);
  EXPECT_NE(std::string(e.what()).find("template 'test' line 3"), std::string::npos) << e.what();

  EXPECT_EQ(error_of("a\nb\n{% for x in y %}\nno end").line(), 4);
  EXPECT_NE(std::string(error_of("{% if 1 %}x").what()).find("'endif'"), std::string::npos);
  EXPECT_NE(std::string(error_of("\n{% frobnicate %}").what()).find("unknown tag 'frobnicate'"), std::string::npos);
  EXPECT_EQ(error_of("\n\n{{ 'unterminated }}").line(), 3);
  EXPECT_NE(std::string(error_of("{% include 'other.jinja' %}").what()).find("not supported"), std::string::npos);
  EXPECT_NE(std::string(error_of("{% break %}").what()).find("outside of a loop"), std::string::npos);
}

TEST(Jinja, RuntimeErrorsNameTheLineOfTheExpression) {
  const TemplateError e = error_of("ok\n{% for m in messages %}\n{{ m.content.text.x }}\n{% endfor %}",
                                   {{"messages", {{{"content", {{"a", 1}}}}}}});
  EXPECT_EQ(e.line(), 3);
  EXPECT_NE(std::string(e.what()).find("has no attribute 'text'"), std::string::npos) << e.what();

  const TemplateError add = error_of("\n{{ 'a' + 1 }}");
  EXPECT_EQ(add.line(), 2);
  EXPECT_NE(std::string(add.what()).find("can only concatenate str"), std::string::npos) << add.what();
  EXPECT_NE(std::string(error_of("{{ missing.attr }}").what()).find("'missing' is undefined"), std::string::npos);
  EXPECT_NE(std::string(error_of("{{ 1 / 0 }}").what()).find("division by zero"), std::string::npos);
  EXPECT_NE(std::string(error_of("{{ x|nosuchfilter }}").what()).find("No filter named 'nosuchfilter'"),
            std::string::npos);
}

TEST(Jinja, RaiseExceptionCarriesTheMessage) {
  const TemplateError e = error_of("a\n\n{{ raise_exception('Conversation roles must alternate ' ~ 'user/assistant') }}");
  EXPECT_EQ(e.message(), "Conversation roles must alternate user/assistant");
  EXPECT_EQ(e.line(), 3);
  // TemplateError is a roll::Error, so callers that catch roll::Error see template failures.
  EXPECT_THROW(render("{{ raise_exception('x') }}"), roll::Error);
}

TEST(Jinja, WhitespaceControlAsHuggingFaceConfiguresIt) {
  // trim_blocks drops the newline after a block tag; lstrip_blocks the indentation before it.
  EXPECT_EQ(render("{% if true %}\n  yes\n  {% endif %}\nend"), "  yes\nend");
  EXPECT_EQ(render("  {%- if true %}x{% endif -%}  \n y"), "xy");
  EXPECT_EQ(render("{{ 'a' }}\n  {{- 'b' }}"), "ab");
  EXPECT_EQ(render("{{ 'a' }}  \n{{ 'b' }}"), "a  \nb");  // no trimming after }}
  EXPECT_EQ(render("x\n  {%+ if true %}kept{% endif %}"), "x\n  kept");
  EXPECT_EQ(render("{% if true +%}\nnewline kept{% endif %}"), "\nnewline kept");
  EXPECT_EQ(render("a\n{# comment #}\nb\n"), "a\nb");  // one trailing newline is dropped
  EXPECT_EQ(render("a\r\nb\r\n\r\n"), "a\nb\n");
}

TEST(Jinja, ScopesFollowJinja) {
  // A set inside a loop body lasts one iteration; a namespace carries state out.
  EXPECT_EQ(render("{% set x = 0 %}{% for i in [1, 2] %}{{ x }}{% set x = i %}{{ x }}{% endfor %}{{ x }}"), "01020");
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"),
            "6");
  // An if block is not a scope.
  EXPECT_EQ(render("{% if true %}{% set y = 'in' %}{% endif %}{{ y }}"), "in");
  // Macros see template-level names at call time.
  EXPECT_EQ(render("{% macro m() %}{{ v }}{% endmacro %}{% set v = 'late' %}{{ m() }}"), "late");
  EXPECT_NE(std::string(error_of("{% set x = 1 %}{% set x.y = 2 %}").what()).find("non-namespace"), std::string::npos);
}

TEST(Jinja, LoopVariables) {
  EXPECT_EQ(render("{% for c in 'abc' %}{{ loop.index }}{{ loop.revindex0 }}{% if loop.first %}F{% endif %}"
                   "{% if loop.last %}L{% endif %}{{ loop.length }}{% endfor %}"),
            "12F321330L3");
  EXPECT_EQ(render("{% for m in ms %}{{ loop.previtem or '-' }}{{ m }}{{ loop.nextitem or '-' }} {% endfor %}",
                   {{"ms", {"a", "b"}}}),
            "-ab ab- ");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for i in range(10) %}{% if i is odd %}{% continue %}{% endif %}{% if i > 6 %}{% break %}"
                   "{% endif %}{{ i }}{% endfor %}"),
            "0246");
}

TEST(Jinja, ValuesPrintAsPython) {
  EXPECT_EQ(py::repr_float(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(py::repr_float(1e16), "1e+16");
  EXPECT_EQ(py::repr_float(1e15), "1000000000000000.0");
  EXPECT_EQ(py::repr_float(1.5e-7), "1.5e-07");
  EXPECT_EQ(py::repr_float(0.0001), "0.0001");
  EXPECT_EQ(py::repr_float(-2.0), "-2.0");
  EXPECT_EQ(render("{{ [1, 'it\\'s', none, true, 2.5] }}{{ {'k': \"v\"} }}{{ (1,) }}"),
            "[1, \"it's\", None, True, 2.5]{'k': 'v'}(1,)");
  EXPECT_EQ(render("{{ s[::-1] }}|{{ s[1:3] }}|{{ s|length }}", {{"s", "h\u00e9llo"}}), "oll\u00e9h|\u00e9l|5");
}

TEST(Jinja, ToJsonIsPythonJsonDumps) {
  const ojson x = {{"name", "f"}, {"args", {{"b", {1, 2.5, nullptr, true}}, {"a", "\u65e5 \"q\"\n"}}}, {"e", ojson::object()}};
  EXPECT_EQ(dumps(from_json(x)), R"({"name": "f", "args": {"b": [1, 2.5, null, true], "a": "日 \"q\"\n"}, "e": {}})");
  EXPECT_EQ(render("{{ x|tojson(indent=2) }}", {{"x", {{"a", {1}}, {"b", ojson::array()}}}}),
            "{\n  \"a\": [\n    1\n  ],\n  \"b\": []\n}");
  EXPECT_EQ(render("{{ '\u00e9\U0001F600'|tojson(ensure_ascii=true) }}"), "\"\\u00e9\\ud83d\\ude00\"");
  EXPECT_EQ(render("{{ x|tojson(separators=(',', ':'), sort_keys=true) }}", {{"x", {{"b", 1}, {"a", 2}}}}),
            "{\"a\":2,\"b\":1}");
  EXPECT_NE(std::string(error_of("{{ undefined_name|tojson }}").what()).find("not JSON serializable"), std::string::npos);
}

TEST(Jinja, StrftimeNowUsesLocalTime) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%d %b %Y", &tm);
  EXPECT_EQ(render("{{ strftime_now('%d %b %Y') }}"), buf);
}

TEST(Jinja, RunawayRecursionIsAnErrorNotACrash) {
  const TemplateError e = error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_NE(std::string(e.what()).find("recursed too deeply"), std::string::npos) << e.what();
}

TEST(Jinja, TemplateIsReusableAndContextIsNotModified) {
  const Template t("{% set messages = messages[1:] %}{{ messages|length }}", "reuse");
  const Value ctx = from_json(ojson{{"messages", {1, 2, 3}}});
  EXPECT_EQ(t.render(ctx.as_dict()), "2");
  EXPECT_EQ(t.render(ctx.as_dict()), "2");
  EXPECT_EQ(ctx.as_dict().find("messages")->as_list().size(), 3u);
}
