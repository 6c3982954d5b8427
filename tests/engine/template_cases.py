"""Chat templates written for these tests, one per construct that published templates use,
and a reference renderer with transformers' `apply_chat_template` semantics.

The constructs come from reading the published templates (llama.cpp's models/templates):
undefined variables tested or printed (`tools`, `enable_thinking`, `builtin_tools`,
`message.tool_calls`), loop controls, transformers' `tojson`, `raise_exception`,
`strftime_now`, `{% generation %}`, namespaces, macros, the filters and tests they use,
string methods, `reasoning_content`, and the date variables. None of these is a copy of a
published template.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import jinja2
import jinja2.ext
from jinja2 import nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

CONVERSATION = [
    {"role": "system", "content": "You are terse. Use <b> & \"quotes\" freely; café."},
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "4.", "reasoning_content": "Two pairs make four."},
    {"role": "user", "content": "And 3+3?"},
]

HEAD = "{%- set sys = messages[0].content if messages[0].role == 'system' else '' -%}"
TURN = "<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
GEN = "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif -%}"

CASES: dict[str, str] = {
    "lenient_undefined": (
        "{%- if tools %}TOOLS{% endif -%}"
        "{%- if builtin_tools is defined %}BUILTIN{% endif -%}"
        "{%- if enable_thinking is defined and enable_thinking %}THINK{% endif -%}"
        "{%- for m in messages %}{% if m.tool_calls %}CALLS{% endif %}" + TURN + "{% endfor %}"
        "{{ undefined_name }}{{ messages[0].nothing }}" + GEN
    ),
    "loop_controls": (
        "{%- for m in messages %}{% if m.role == 'system' %}{% continue %}{% endif %}"
        + TURN + "{% if loop.index > 10 %}{% break %}{% endif %}{% endfor %}" + GEN
    ),
    "break_at_last_user": (
        "{%- set ns = namespace(last=0) %}"
        "{%- for m in messages[::-1] %}{% if m.role == 'user' %}"
        "{% set ns.last = messages|length - 1 - loop.index0 %}{% break %}{% endif %}{% endfor -%}"
        "{%- for m in messages %}{% if loop.index0 == ns.last %}[LAST]{% endif %}" + TURN + "{% endfor %}" + GEN
    ),
    "tojson_options": (
        "{{ messages[0] | tojson }}\n{{ messages[1] | tojson(indent=2) }}\n"
        "{{ {'b': 1, 'a': [1, 2]} | tojson(separators=(',', ':'), sort_keys=true) }}\n"
        "{{ 'é<>&' | tojson(ensure_ascii=true) }}" + GEN
    ),
    "raise_on_bad_roles": (
        "{%- for m in messages %}{% if (m.role == 'user') != (loop.index0 % 2 == 1) and m.role != 'system' %}"
        "{{ raise_exception('Conversation roles must alternate user/assistant') }}{% endif %}"
        + TURN + "{% endfor %}" + GEN
    ),
    "strftime_and_dates": (
        "Today: {{ strftime_now('%Y') }}|{{ date_string }}|{{ current_date }}\n"
        "{%- for m in messages %}" + TURN + "{% endfor %}" + GEN
    ),
    "generation_block": (
        "{%- for m in messages %}{% if m.role == 'assistant' %}<|im_start|>assistant\n"
        "{% generation %}{{ m.content }}<|im_end|>{% endgeneration %}\n"
        "{% else %}" + TURN + "{% endif %}{% endfor %}" + GEN
    ),
    "macros_and_namespace": (
        "{%- macro turn(role, text) -%}<|im_start|>{{ role }}\n{{ text | trim }}<|im_end|>\n{%- endmacro -%}"
        "{%- set ns = namespace(n=0) -%}"
        "{%- for m in messages %}{% set ns.n = ns.n + 1 %}{{ turn(m.role, m.content) }}\n{% endfor -%}"
        "count={{ ns.n }}\n" + GEN
    ),
    "filters_and_tests": (
        "{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(' / ') }}\n"
        "{{ messages | rejectattr('role', 'equalto', 'system') | list | length }}\n"
        "{%- for k, v in {'z': 1, 'a': 2} | dictsort %}{{ k }}={{ v }};{% endfor %}\n"
        "{%- for k, v in messages[0].items() %}{{ k | upper }} {% endfor %}\n"
        "{{ messages[0].content is string }}{{ messages[0] is mapping }}{{ messages is iterable }}"
        "{{ none is none }}{{ 3 is number }}{{ messages is sequence }}{{ true is boolean }}\n"
        "{{ (messages | first).role | default('x') }}{{ nothing | default('fallback') }}\n"
        "{{ 'a,b' | replace(',', ';') | lower }}{{ '  pad ' | trim | indent(2) }}{{ 3.7 | int }}{{ 5 | string }}\n"
        + GEN
    ),
    "string_methods": (
        "{%- for m in messages %}{% set c = m.content %}"
        "{% if c.startswith('What') %}Q:{% endif %}{% if c.endswith('.') %}E:{% endif %}"
        "{{ c.split(' ')[0] }}|{{ c.strip('.') }}|{{ c.lstrip('W') }}|{{ c.rstrip('?') }}|{{ c.replace('2', 'two') }}\n"
        "{% endfor %}{{ '{} and {}'.format('x', 'y') }}" + GEN
    ),
    "reasoning_kept_for_last_turn_only": (
        "{%- set ns = namespace(last=-1) %}{% for m in messages %}{% if m.role == 'user' %}"
        "{% set ns.last = loop.index0 %}{% endif %}{% endfor -%}"
        "{%- for m in messages %}{% if m.role == 'assistant' %}"
        "{% set c = m.content %}{% if m.reasoning_content is string and loop.index0 > ns.last %}"
        "<|im_start|>assistant\n<think>\n{{ m.reasoning_content }}\n</think>\n\n{{ c }}<|im_end|>\n"
        "{% else %}<|im_start|>assistant\n{{ c.split('</think>')[-1] | trim }}<|im_end|>\n{% endif %}"
        "{% else %}" + TURN + "{% endif %}{% endfor -%}"
        "{%- if add_generation_prompt %}<|im_start|>assistant\n"
        "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}"
        "{% endif -%}"
    ),
    "special_tokens": "{{ bos_token }}{%- for m in messages %}" + TURN + "{% endfor %}{{ eos_token }}" + GEN,
    "effort_and_system_override": (
        HEAD + "{%- if reasoning_effort is defined %}Reasoning: {{ reasoning_effort }}\n{% endif -%}"
        "{%- if sys %}System: {{ sys }}\n{% endif -%}"
        "{%- for m in messages if m.role != 'system' %}" + TURN + "{% endfor %}" + GEN
    ),
    "whitespace_control": (
        "{% for m in messages %}\n    {% if m.role %}\n<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
        "    {% endif %}\n{% endfor %}\n{% if add_generation_prompt %}\n<|im_start|>assistant\n{% endif %}"
    ),
}


class _Generation(jinja2.ext.Extension):
    tags = {"generation"}

    def parse(self, parser: Any) -> Any:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller: Any) -> str:
        return caller()


def reference_render(source: str, messages: list[dict[str, Any]], **kwargs: Any) -> str:
    """What transformers' `apply_chat_template` renders, written from its documented semantics."""

    def tojson(x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
               sort_keys: bool = False) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_Generation, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
    return env.from_string(source).render(messages=messages, add_generation_prompt=True, **kwargs)
