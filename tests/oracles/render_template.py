#!/usr/bin/python3
"""Oracle for rollcpp's Jinja renderer: renders templates exactly as Hugging Face transformers'
apply_chat_template does (ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and
loopcontrols; tojson = json.dumps(ensure_ascii=False, ...); raise_exception; strftime_now; the
{% generation %} tag). Run it with Debian's /usr/bin/python3 and python3-jinja2.

usage: render_template.py CASES.json OUT.json
CASES.json: a list of {"template": PATH | "source": TEXT, "context": {...}}; PATH is a .jinja file
            or a tokenizer_config.json whose "chat_template" is used.
OUT.json:   a list with {"text": RENDERED} or {"error": MESSAGE} per case, in order.
"""
import json
import sys
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTag(Extension):
    """HF's AssistantTracker without the tracking: {% generation %}body{% endgeneration %}."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return datetime.now().strftime(fmt)


def make_env():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def load_source(case):
    if "source" in case:
        return case["source"]
    path = case["template"]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".json"):
        template = json.loads(text)["chat_template"]
        if isinstance(template, list):  # named templates: HF picks "default"
            template = next(t["template"] for t in template if t["name"] == "default")
        return template
    return text


def main():
    cases_path, out_path = sys.argv[1], sys.argv[2]
    with open(cases_path, encoding="utf-8") as f:
        cases = json.load(f)
    env = make_env()
    compiled = {}  # compiling dominates the run time; cases share few templates
    results = []
    for case in cases:
        try:
            source = load_source(case)
            if source not in compiled:
                compiled[source] = env.from_string(source)
            template = compiled[source]
            results.append({"text": template.render(**case.get("context", {}))})
        except Exception as e:  # the C++ side compares error presence and message
            results.append({"error": f"{type(e).__name__}: {e}"})
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
