"""Every way a chat template can build text or lists is sized before it builds: a small hostile
template is refused quickly without the process allocating much, and real uses still render
exactly as plain Jinja renders them."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Iterator

import pytest

from prefill.engine.errors import TemplateError
from prefill.engine.message import Message
from prefill.engine.prompt.sandbox import make_environment, render_bounded
from prefill.engine.prompt.template import ChatTemplate
from tests.engine.template_cases import CASES, reference_render

PEAK_BYTES = 64 * 1024 * 1024
BIG = "{% set s = 'x' * 4000000 %}"  # just under the cap on one value
ROOM = "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}"  # a loop that keeps what it builds


def doubling(start: str, step: str) -> str:
    """`ns.s` set from itself forty times over: 2**40 times as long, if nothing stops it."""
    return f"{{% set ns = namespace(s={start}) %}}{{% for i in range(40) %}}{step}{{% endfor %}}"


HOSTILE = {
    # operators
    "concat_doubling": doubling("'x'", "{% set ns.s = ns.s ~ ns.s %}"),
    "add_doubling": doubling("'x'", "{% set ns.s = ns.s + ns.s %}"),
    "list_add_doubling": doubling("[1]", "{% set ns.s = ns.s + ns.s %}"),
    "list_repeat": "{{ ([1] * 10**9)|length }}",
    "repeat_by_true_count": "{{ 'x' * (10**9 + true) }}",
    "power_tower": "{% set ns = namespace(n=2) %}{% for i in range(9) %}{% set ns.n = ns.n ** 4096 %}{% endfor %}",
    "squaring": "{% set ns = namespace(n=3) %}{% for i in range(64) %}{% set ns.n = ns.n * ns.n %}{% endfor %}",
    "printf_width": "{{ '%999999999d' % 1 }}",
    "printf_precision": "{{ '%.999999999f' % 1.0 }}",
    "printf_star": "{{ '%*s' % (10**9, 'x') }}",
    "printf_nested_key": "{{ '%(a(b))999999999s' % {'a(b)': 'x'} }}",
    "printf_reused_key": "{{ ('%(a)s' * 1000000) % {'a': 'x' * 1000} }}",
    # str methods
    "format_width": "{{ '{:>999999999}'.format(1) }}",
    "format_nested_width": "{{ '{0:{1}}'.format('x', 10**9) }}",
    "format_arabic_digits": "{{ '{:\u0669\u0669\u0669\u0669\u0669\u0669\u0669\u0669\u0669}'.format(1) }}",
    "format_repeated_field": "{{ ('{0}' * 1000000).format('x' * 1000) }}",
    "format_map_width": "{{ '{a:>999999999}'.format_map({'a': 1}) }}",
    "format_repr_of_big": "{{ '{0!r}'.format([['x' * 1000] * 100000] * 100) }}",
    "format_via_attr": "{{ ('{:>999999999}'|attr('format'))(1) }}",
    "center": "{{ 'x'.center(10**9) }}",
    "ljust": "{{ 'x'.ljust(10**9) }}",
    "rjust": "{{ 'x'.rjust(10**9, '.') }}",
    "zfill": "{{ '1'.zfill(10**9) }}",
    "expandtabs": "{{ ('\t' * 1000).expandtabs(10**6) }}",
    "replace_empty_old": "{{ ('x' * 1000000).replace('', 'y' * 100) }}",
    "replace_doubling": doubling("'x'", "{% set ns.s = ns.s.replace('x', 'xx') %}"),
    "join_method": "{{ ('x' * 1000000).join(['a'] * 1000) }}",
    "translate_table": "{{ ('a' * 100000).translate({97: 'x' * 100000}) }}",
    "split_into_words": "{{ ('ab ' * 1300000).split()|length }}",
    "to_bytes": "{{ (1).to_bytes(10**9, 'big')|length }}",
    "bytes_ljust": "{{ 'x'.encode().ljust(10**9) }}",
    # filters
    "f_center": "{{ 'x'|center(10**9) }}",
    "f_indent_width": "{{ ('a\\n' * 100000)|indent(100000) }}",
    "f_indent_string": "{{ ('a\\n' * 1000)|indent('x' * 1000000) }}",
    "f_join": "{{ (['x' * 1000000] * 1000)|join }}",
    "f_join_separator": "{{ range(10000)|join('x' * 1000000) }}",
    "f_join_generator": "{{ range(100000)|map('string')|map('center', 1000)|join }}",
    "f_replace": "{{ ('x' * 1000000)|replace('x', 'y' * 1000) }}",
    "f_wordwrap": "{{ ('a ' * 1000000)|wordwrap(1, wrapstring='x' * 1000) }}",
    "f_tojson_indent": "{{ [[1]]|tojson(indent=10**9) }}",
    "f_tojson_shared": "{% set ns = namespace(l=[]) %}{% for i in range(300) %}{% set ns.l = [ns.l, ns.l] %}"
                       "{% endfor %}{{ ns.l|tojson }}",
    "f_tojson_separators": "{{ range(10000)|list|tojson(separators=('x' * 100000, ':')) }}",
    "f_format": "{{ '%999999999s'|format('x') }}",
    "f_format_of_a_list": "{{ ['%999999999s']|format('x') }}",
    "f_string_of_shared": "{{ ([['x' * 1000] * 1000] * 1000)|string }}",
    "f_list_of_text": "{{ ('\u4e00' * 1000000)|list|length }}",
    "f_batch": "{{ [1]|batch(10**9, 0)|list|length }}",
    "f_slice": "{{ [1]|slice(10**9)|list|length }}",
    "f_sum_of_lists": "{{ ([[1]] * 100000)|sum(start=[])|length }}",
    "f_map_center": "{{ range(100000)|map('center', 100000)|list|length }}",
    "f_pprint_wide_key": "{{ {'k' * 3000000: range(40)|list}|pprint|length }}",
    "f_round_precision": "{{ 5|round(10**9, 'floor') }}",
    "f_urlencode": "{{ ('\u00e9' * 1000000)|urlencode|length }}",
    "f_striptags": "{{ ('a ' * 2000000)|striptags|length }}",
    "f_title": "{{ ('a ' * 2000000)|title|length }}",
    "f_sort": "{{ (range(100000)|list * 5)|sort|length }}",
    "f_escape": "{% autoescape true %}{{ '<' * 4000000 }}{% endautoescape %}",
    "filter_block": doubling("'x'", "{% set ns.s %}{% filter upper %}{{ ns.s }}{{ ns.s }}{% endfilter %}{% endset %}"),
    # blocks, macros, loops
    "set_block_doubling": doubling("'x'", "{% set ns.s %}{{ ns.s }}{{ ns.s }}{% endset %}"),
    "macro_doubling": "{% macro d(n) %}{% if n %}{{ d(n - 1) }}{{ d(n - 1) }}{% else %}{{ 'x' * 4000000 }}{% endif %}"
                      "{% endmacro %}{{ d(10)|length }}",
    "caller_doubling": "{% macro twice() %}{{ caller() }}{{ caller() }}{% endmacro %}"
                       + doubling("'x'", "{% set ns.s %}{% call twice() %}{{ ns.s }}{% endcall %}{% endset %}"),
    "loop_cycle_doubling": doubling("'xy'", "{% set ns.s = loop.cycle(ns.s, ns.s) ~ ns.s %}"),
    "output_of_a_list": "{{ [['x' * 1000] * 100000] * 100 }}",
    "refusal_of_a_list": "{{ raise_exception([['x' * 1000] * 100000] * 100) }}",
    "range_past_its_cap": "{{ range(10**9)|length }}",
    "nested_range_output": "{% for i in range(100000) %}{% for j in range(100000) %}{{ 'abcdefgh' }}{% endfor %}"
                           "{% endfor %}",
    "one_char_pieces": "{% for c in '\u4e00' * 4000000 %}{{ c }}{% endfor %}",
    "lipsum": "{{ lipsum(10**6)|length }}",
    "strftime_now": "{{ strftime_now('%c' * 1000000)|length }}",
    # values kept alive: each under the cap, too many of them
    "keeps_concats": BIG + ROOM + "{% set ns.l = ns.l + [s ~ i] %}{% endfor %}",
    "keeps_slices": BIG + ROOM + "{% set ns.l = ns.l + [s[i:]] %}{% endfor %}",
    "keeps_nesting": ROOM + "{% set ns.l = ns.l + [ns.l] %}{% endfor %}",
    "keeps_namespaces": "{% set d = dict.fromkeys(range(60000), 1) %}" + ROOM + "{% set ns.l = ns.l + [namespace(d)] %}"
                        "{% endfor %}",
    "keeps_cyclers": "{% set big = [0] * 500000 %}" + ROOM + "{% set ns.l = ns.l + [cycler(*big)] %}{% endfor %}",
    "keeps_varargs": "{% set big = [0] * 500000 %}{% macro r(n) %}{% if n %}{{ r(n - 1, *varargs) }}{% endif %}"
                     "{% endmacro %}{{ r(300, *big) }}",
    "keeps_macro_arguments": "{% macro r(n, s) %}{% if n %}{{ r(n - 1, s ~ n) }}{% endif %}{% endmacro %}"
                             "{{ r(150, 'x' * 4000000) }}",
}


@pytest.fixture(scope="module")
def traced() -> Iterator[None]:
    tracemalloc.start()
    yield
    tracemalloc.stop()


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_template_is_refused_before_it_allocates(traced: None, name: str) -> None:
    template = ChatTemplate(HOSTILE[name], max_seconds=1.0)
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    with pytest.raises(TemplateError):
        template.render([Message("user", "hi")])
    assert time.perf_counter() - t0 < 5.0
    assert tracemalloc.get_traced_memory()[1] - before < PEAK_BYTES


@pytest.mark.parametrize("source, words", [
    ("{{ 'x'.center(10**9) }}", "tried to build a value of over 4 MB"),
    ("{% set ns = namespace(n=3) %}{% for i in range(64) %}{% set ns.n = ns.n * ns.n %}{% endfor %}",
     "a number of over 19,660 digits"),
    (HOSTILE["set_block_doubling"], "a block of over 8 MB"),
    (HOSTILE["keeps_concats"], "built more than 32 MB of values in all"),
])
def test_refusal_says_which_bound(source: str, words: str) -> None:
    with pytest.raises(TemplateError, match=words):
        ChatTemplate(source).render([Message("user", "hi")])


MESSAGES = [
    {"role": "system", "content": "Be terse.\tUse <b> & \"quotes\"; café."},
    {"role": "user", "content": "What is 2+2?\nThink."},
    {"role": "assistant", "content": "4."},
    {"role": "user", "content": "And 3+3?"},
]

BENIGN = {
    "str_padding": "{{ 'ab'.center(10, '*') }}|{{ 'ab'.ljust(5) }}|{{ 'ab'.rjust(5, '.') }}|{{ '42'.zfill(6) }}|"
                   "{{ 'a\tb'.expandtabs(4) }}",
    "str_replace": "{{ 'a-b-c'.replace('-', '+') }}|{{ 'abc'.replace('', '.') }}|{{ 'aaa'.replace('a', 'bb', 2) }}",
    "str_join": "{{ ', '.join(['x', 'y']) }}|{{ '-'.join(messages|map(attribute='role')) }}|{{ ''.join('abc') }}",
    "str_split_and_case": "{{ 'a b  c'.split() }}{{ 'a,b,c'.split(',', 1) }}{{ 'a,b,c'.rsplit(',', 1) }}"
                          "{{ 'l1\\nl2'.splitlines() }}{{ 'Ab'.upper() }}{{ 'Ab'.lower() }}{{ 'ab cd'.title() }}"
                          "{{ 'x'.encode() }}{{ 'abc'.translate({97: 'A'}) }}{{ (258).to_bytes(2, 'big') }}",
    "printf": "{{ '%5d|%-6s|%.2f|%*d|%%' % (42, 'ab', 3.14159, 4, 7) }}|{{ '%(role)s!' % messages[0] }}|"
              "{{ '%s' % [1, 'a'] }}|{{ '%r' % 'q' }}|{{ 7 % 3 }}",
    "str_format": "{{ '{:>8}|{:<4}|{:^7}|{:08.3f}|{!r}'.format('r', 'l', 'c', 3.14159, 'q') }}|"
                  "{{ '{0:{1}}'.format('x', 5) }}|{{ '{a}-{b}'.format_map({'a': 1, 'b': 2}) }}|"
                  "{{ '{0[role]}'.format(messages[0]) }}|{{ '{:,}'.format(1234567) }}",
    "filters_text": "{{ 'x'|center(9) }}|{{ 'a\nb\n\nc'|indent(2, first=true) }}|{{ 'a\nb'|indent('> ') }}|"
                    "{{ [1, 2, 3]|join('/') }}|{{ 'aXbX'|replace('X', '-') }}|{{ ('word ' * 30)|wordwrap(20) }}|"
                    "{{ ('long text ' * 10)|truncate(20) }}|{{ '<b>x</b>  <i>y</i>'|striptags }}|"
                    "{{ 'hello world'|title }}|{{ 'hello'|capitalize }}|{{ 'one two'|wordcount }}|"
                    "{{ '%s-%s'|format('a', 'b') }}|{{ 5|string }}|{{ 'abc'|reverse }}|{{ 'ab'|upper }}",
    "filters_json": "{{ messages|tojson }}|{{ messages[0]|tojson(indent=2) }}|"
                    "{{ {'b': [1, 2], 'a': none}|tojson(separators=(',', ':'), sort_keys=true) }}|"
                    "{{ 'é'|tojson(ensure_ascii=true) }}|{{ [1, [2]]|tojson(indent='\t') }}",
    "filters_lists": "{{ 'ab'|list }}|{{ range(5)|list }}|{{ range(7)|batch(3, 0)|list }}|{{ range(7)|slice(3)|list }}|"
                     "{{ [1, 2, 3]|sum }}|{{ [[1], [2]]|sum(start=[]) }}|{{ [3, 1, 2]|sort }}|"
                     "{{ [1, 1, 2]|unique|list }}|"
                     "{{ messages|map(attribute='content')|map('upper')|select|list }}|{{ {'b': 1, 'a': 2}|dictsort }}|"
                     "{{ messages|groupby('role')|map(attribute='grouper')|list }}|{{ {'a': 1}|items|list }}|"
                     "{{ range(4)|map('string')|sort(reverse=true)|join }}",
    "filters_other": "{{ 123456789|filesizeformat }}|{{ {'a': 'b c', 'd': 1}|urlencode }}|{{ 'a b/é'|urlencode }}|"
                     "{{ '<&>'|escape }}|{{ 3.14159|round(2) }}|{{ 2.5|round(0, 'floor') }}|{{ {'a': [1, 2]}|pprint }}|"
                     "{{ 'see www.example.com'|urlize }}|{{ {'class': 'x'}|xmlattr }}|{{ 'x'|e }}",
    "operators_and_slices": "{% for i in range(3) %}{{ i ~ '-' ~ messages[0].role ~ [1, 2] }}{% endfor %}|"
                            "{{ 'abcdef'[1:4] }}{{ 'abcdef'[::-1] }}{{ 'abcdef'[-2:] }}{{ messages[1:]|length }}|"
                            "{{ messages[::-1][0].role }}|{{ (1, 2, 3)[:2] }}|{{ 2 ** 10 }}|{{ 2 ** 4096 % 1000 }}|"
                            "{{ 10 ** 20 * 10 ** 20 }}|{{ 'x' * 3 }}|{{ [0] * 3 }}|{{ (1, 2) + (3,) }}|"
                            "{{ 'ab' + 'cd' }}|{{ 2 * 'ab' }}|{{ 'x' * true }}|{{ 2 ** -1 }}|{{ 2.0 ** 0.5 }}",
    "blocks_and_macros": "{% macro m(x) %}[{{ x }}{{ caller() if caller is defined else '' }}]{% endmacro %}"
                         "{{ m(1) }}{% call m(2) %}inner{% endcall %}{% set b %}{{ m(3) }}{% endset %}{{ b|upper }}"
                         "{% filter upper %}up{{ b }}{% endfilter %}{% set c | trim %}  c  {% endset %}{{ c }}"
                         "{% for x in [[1, [2]], 3] recursive %}{% if x is iterable %}({{ loop(x) }}){% else %}{{ x }}"
                         "{% endif %}{% endfor %}{% macro v() %}{{ varargs|length }}{% endmacro %}{{ v(*range(4)) }}",
    "namespace_and_dict": "{% set ns = namespace(s='', d=dict(a=1)) %}{% for m in messages %}"
                          "{% set ns.s = ns.s ~ m.role[0] %}{% endfor %}{{ ns.s }}|{{ dict(ns.d, b=2)|dictsort }}|"
                          "{{ dict.fromkeys(['x', 'y'], 0)|dictsort }}|{{ cycler('a', 'b').next() }}",
    "output_of_values": "{{ messages }}|{{ none }}|{{ 1.5 }}|{{ [1, 'a', none] }}|{{ messages[0].items()|list }}",
    "autoescape": "{% autoescape true %}{{ '<b>' }}{{ '<i>' ~ 'x' }}{{ '<&>'|safe }}{% endautoescape %}",
}


@pytest.mark.parametrize("name", sorted(BENIGN))
def test_real_uses_render_as_plain_jinja_does(name: str) -> None:
    source = BENIGN[name]
    template = make_environment().from_string(source)
    got = render_bounded(template, {"messages": MESSAGES, "add_generation_prompt": True})
    assert got == reference_render(source, MESSAGES)


def test_a_long_chat_is_not_refused() -> None:
    """Four million characters of chat (a million tokens), through templates that copy each message a few times."""
    long = [Message("user" if i % 2 == 0 else "assistant", f"{i}: " + "word, and more words\n" * 4700)
            for i in range(41)]
    chatml = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] "
              "+ '<|im_end|>' + '\\n' }}{% endfor %}{{ '<|im_start|>assistant\\n' }}")
    for source in (chatml, CASES["reasoning_kept_for_last_turn_only"]):
        out = ChatTemplate(source).render(long)
        assert len(out) > sum(len(m.content) for m in long)
    out = ChatTemplate(CASES["string_methods"]).render(long[:11])  # writes each message four times
    assert len(out) > 4 * sum(len(m.content) for m in long[:11]) * 0.99
