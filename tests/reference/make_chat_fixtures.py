#!/usr/bin/env python3
"""Renders chat templates with Python jinja2 the way Hugging Face transformers does, as the
oracle for our C++ Jinja interpreter (tests/unit/chat/chat_template_fixture_test.cpp).

Run with the reference venv:  /work/refvenv/bin/python tests/reference/make_chat_fixtures.py

Inputs: tests/fixtures/chat/templates/*.jinja (real model templates, stored as data; the SmolLM2
one is refreshed from the default model's GGUF metadata when the model is present) and the
feature templates written below. The Qwen3 (its MoE models share it), QwQ, DeepSeek-R1-Distill-Qwen,
Phi-3.5-mini and Mistral-Nemo templates are the files of llama.cpp's models/templates (its copies
of QwQ and DeepSeek-R1-Distill close the think block unless enable_thinking is true); Gemma 3 (-it)
and Phi-4-mini are their tokenizer_config.json `chat_template` strings. Output: tests/fixtures/chat/chat_cases.json with, for every
(template, conversation) pair, the rendered text or the error jinja2 raised.

The environment matches transformers' _compile_jinja_template (utils/chat_template_utils.py):
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]),
tojson overridden by json.dumps(ensure_ascii=False, ...), raise_exception raising TemplateError,
strftime_now, and a namespace that rejects underscore-prefixed names.
"""
import json
import pathlib
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "chat"
TEMPLATES = FIXTURES / "templates"
MODEL = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


# Templates that exercise interpreter features beyond the real ones. Written to tolerate every
# conversation below (errors are compared too, but most cases should render).
FEATURE_TEMPLATES = {
    "features_loops.jinja": """\
{%- set ns = namespace(users=0, last_role='none') -%}
{% for m in messages %}
  {%- if m.role == 'user' %}{% set ns.users = ns.users + 1 %}{% endif %}
  [{{ loop.index }}/{{ loop.length }} i0={{ loop.index0 }} rev={{ loop.revindex }},{{ loop.revindex0 }} {{ loop.cycle('odd', 'even') }}{% if loop.first %} first{% endif %}{% if loop.last %} last{% endif %}] {{ m.role }}
  {%- if loop.previtem is defined %} after {{ loop.previtem.role }}{% endif %}
  {%- set ns.last_role = m.role %}

{% else %}
no messages
{% endfor %}
users={{ ns.users }} last={{ ns.last_role }}
{% for m in messages if m.role != 'system' %}{{ loop.index }}:{{ m.role[:1] }}{{ ',' if not loop.last }}{% endfor %}

{% for m in messages %}{% if m.role == 'system' %}{% continue %}{% endif %}{% if loop.index > 4 %}{% break %}{% endif %}{{ m.role }};{% endfor %}

{% for k, v in {'a': 1, 'b': [1, 2], 'c': {'d': none}}.items() %}{{ k }}={{ v }} {% endfor %}

{% for k in {'x': 1, 'y': 2} %}{{ k }}{% endfor %} {% for i in range(3) %}{{ i }}{% endfor %} {% for i in range(10, 0, -3) %}{{ i }},{% endfor %}
{% for a, b in [(1, 'one'), (2, 'two')] %}{{ a }}-{{ b }} {% endfor %}
{% for m in messages[::-1] %}{{ m.role }} {% endfor %}|{% for m in messages[1:3] %}{{ m.role }} {% endfor %}
{% for x in [] %}never{% else %}empty-else{% endfor %}
{% for outer in [1, 2] %}{% for inner in 'ab' %}{{ outer }}{{ inner }}{{ loop.index }} {% endfor %}{% endfor %}
""",
    "features_filters.jinja": """\
{%- set first = messages[0] if messages else {'role': 'none', 'content': ''} -%}
{%- set text = first.content if first.content is string else 'parts' -%}
len={{ messages | length }} count={{ messages | count }} text_len={{ text | length }}
upper={{ text | upper }} lower={{ text | lower }} title={{ 'hello wORLD-foo (bar)' | title }} cap={{ 'hELLO world' | capitalize }}
trim=[{{ '  \\n padded \\t ' | trim }}] trimx=[{{ 'xxhixx' | trim('x') }}] replace={{ text | replace('e', 'E') }} replace1={{ 'aaa' | replace('a', 'b', 2) }}
roles={{ messages | map(attribute='role') | join(', ') }} uniq={{ messages | map(attribute='role') | unique | list }}
users={{ messages | selectattr('role', 'equalto', 'user') | list | length }} nonusers={{ messages | rejectattr('role', 'equalto', 'user') | map(attribute='role') | join('|') }}
sel={{ [0, 1, 2, 3, 4] | select('odd') | list }} rej={{ [0, 1, 2, '', none] | reject | list }} selattr={{ messages | selectattr('tool_calls') | list | length }}
first={{ (messages | first).role if messages else 'n/a' }} last={{ (messages | last).role if messages else 'n/a' }} fl={{ [3, 1, 2] | first }}{{ 'xyz' | last }}
default={{ undefined_thing | default('dflt') }} d={{ '' | d('empty', true) }} keep={{ 0 | default(5) }} none={{ none | default('x') }}
nums={{ '42' | int }} {{ '4.7' | int }} {{ 'junk' | int(-1) }} {{ 3.99 | int }} {{ '2.5' | float }} {{ 7 | float }} {{ 'x' | float }} {{ -3 | abs }} {{ -2.5 | abs }}
round={{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 2.1 | round(0, 'ceil') }} {{ 2.9 | round(0, 'floor') }} {{ 5 | round }}
sort={{ ['b', 'A', 'c'] | sort }} {{ [3, 1, 2] | sort(reverse=true) }} {{ messages | sort(attribute='role') | map(attribute='role') | join(',') }}
rev={{ 'héllo' | reverse }} {{ [1, 2, 3] | reverse | list }} minmax={{ [4, 2, 8] | min }} {{ [4, 2, 8] | max }} {{ ['b', 'A'] | min }} sum={{ [1, 2, 3.5] | sum }}
items={% for k, v in {'k1': 'v1', 'k2': 2} | items %}{{ k }}:{{ v }};{% endfor %} dictsort={{ {'b': 1, 'a': 2} | dictsort }}
string={{ 12 | string }}{{ none | string }}{{ true | string }} list={{ 'abc' | list }} escape={{ '<a href="x">&\\'</a>' | e }} safe={{ '<b>' | safe }}
json={{ messages | tojson }}
json_indent={{ {'a': [1, 2.0, {'b': none}], 'c': 'ü"\\n', 'e': [], 'f': {}} | tojson(indent=2) }}
json_sorted={{ {'z': 1, 'a': [true, false]} | tojson(sort_keys=true) }} json_sep={{ {'a': 1, 'b': [1, 2]} | tojson(separators=(',', ':')) }}
json_ascii={{ 'é✓🌍' | tojson(ensure_ascii=true) }} json_floats={{ [1.0, 0.1, 1e-7, 1e16, 123456789.125, -0.0] | tojson }}
indent={{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'x\\ny' | indent(4, true) }}|{{ 'p\\n\\nq' | indent(2, blank=true) }}
""",
    "features_expr.jinja": """\
{%- macro render(m, prefix='>', suffix='') -%}
{{ prefix }}{{ m.role | upper }}{{ suffix }}
{%- endmacro -%}
{%- set ns = namespace(chars=0) -%}
{% for m in messages %}
{%- set c = m.content if m.content is string else '' %}
{%- set ns.chars = ns.chars + c | length %}
{{ render(m) }}{{ render(m, suffix='!') }} {{ c[:5] }}|{{ c[-3:] }}|{{ c[::-1] }}|{{ c[::2] }} {{ c.strip().split(' ') | length }} {{ c.startswith('H') }} {{ c.endswith('?') }} {{ c.find('o') }} {{ c.count('o') }}
{{ c.upper() }} {{ c.lower() }} {{ c.title() }} {{ c.replace(' ', '_') }} {{ c.lstrip() }}|{{ c.rstrip() }}|{{ c.split() }} {{ c.split('o', 1) }} {{ c.rsplit(' ', 1) }}
{{ 'tool_calls' in m }} {{ m.get('name', 'anon') }} {{ m.keys() | list }} {{ m['role'] in ['user', 'assistant'] }} {{ m.role not in ('system',) }}
{% endfor %}
chars={{ ns.chars }}
{% set greeting %}Hi {{ messages | length }}{% endset %}{{ greeting }}
{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 8 }} {{ 2 ** -1 }} {{ 0.1 + 0.2 }} {{ 1e100 }} {{ 1.5e-5 }} {{ 10 / 4 * 2 }}
{{ 'a' ~ 1 ~ none ~ true }} {{ 'ab' * 3 }} {{ [1, 2] + [3] }} {{ (1, 2) }} {{ (1,) }} {{ () }} {{ {'k': 'v', 'n': [1, {'x': none}]} }} {{ ["it's", 'say "hi"'] }}
{{ 1 < 2 }} {{ 2 <= 1 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'x' != 'y' }} {{ none == none }} {{ not none }} {{ 1 and 'yes' }} {{ 0 or 'fallback' }} {{ '' or [] }}
{{ 'yes' if messages else 'no' }} {{ 'x' if false }}|{{ undefined_var }}|{{ undefined_var is defined }} {{ undefined_var is undefined }} {{ none is none }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 'abc' is string }} {{ 1.5 is number }} {{ 1 is integer }} {{ 1.0 is float }} {{ true is boolean }} {{ {} is mapping }} {{ [] is iterable }} {{ 'x' is sequence }} {{ 5 is gt 3 }} {{ 2 is in [1, 2] }} {{ 'abc' is lower }} {{ messages is not none }}
{{ messages[0].role if messages else 'none' }} {{ messages[-1]['role'] if messages else 'none' }} {{ messages[99] is defined }} {{ 'héllo wörld'[1] }} {{ 'héllo wörld'[-1] }} {{ 'héllo' | length }}
{{ bos_token }}|{{ eos_token }}|{{ add_generation_prompt }}|{{ tools is defined }}|{{ tools | length if tools else 0 }}
{{ dict(a=1, b='two') | tojson }} {{ namespace(x=1).x }} {{ range(5) | list }} {{ range(2, 5) | sum }}
""",
}


def conversations():
    weather_tool = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. Paris"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    }
    search_tool = {"type": "function", "function": {"name": "search", "description": "Web search ✓",
                                                     "parameters": {"type": "object", "properties": {
                                                         "q": {"type": "string"}, "limit": {"type": "integer", "default": 5}}}}}
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}
    u = lambda c: {"role": "user", "content": c}
    a = lambda c: {"role": "assistant", "content": c}
    s = lambda c: {"role": "system", "content": c}
    tool_turn = [u("What's the weather in Paris?"), {"role": "assistant", "tool_calls": [call]},
                 {"role": "tool", "name": "get_weather", "content": "{\"temperature\": 21, \"sky\": \"clear\"}"}]
    convs = [
        ("single_user", [u("Hello!")], True, {}),
        ("single_user_no_prompt", [u("Hello!")], False, {}),
        ("system_user", [s("You are a helpful assistant."), u("Hi there")], True, {}),
        ("multi_turn", [s("Be brief."), u("Hello"), a("Hi there"), u("Who are you?"), a("   I am an assistant   "), u("Another question")], True, {}),
        ("alternating_no_system", [u("Hello"), a("Hi"), u("How are you?"), a("Fine, thanks.")], False, {}),
        ("ends_with_assistant_prompt", [u("Hello"), a("Hi")], True, {}),
        ("unicode", [u("こんにちは 🌍 — café ñ Ünïcödé"), a("Привет! 你好 👋")], True, {}),
        ("empty_content", [u("")], True, {}),
        ("whitespace_content", [s("  padded system  \n"), u("\n\n  spaced  \n")], True, {}),
        ("template_like_content", [u("{{ not_a_var }} {% if x %} {# c #} <|im_end|>")], True, {}),
        ("quotes_backslashes", [u("He said \"hi\" and 'bye'\n\ttab \\ backslash")], True, {}),
        ("consecutive_users", [u("first"), u("second")], True, {}),
        ("starts_with_assistant", [a("I speak first"), u("ok")], True, {}),
        ("system_only", [s("Only a system prompt.")], True, {}),
        ("content_parts", [u([{"type": "text", "text": "Describe this."}, {"type": "text", "text": "Briefly."}])], True, {}),
        ("tool_call_flow", tool_turn, True, {"tools": [weather_tool]}),
        ("tool_call_then_answer", tool_turn + [a("It is 21°C and clear in Paris.")], False, {"tools": [weather_tool]}),
        ("multiple_tool_calls", [u("Weather in Paris and Rome?"), {"role": "assistant", "content": None, "tool_calls": [call, {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}]}], True, {"tools": [weather_tool]}),
        ("tools_user", [u("Find news about llamas")], True, {"tools": [weather_tool, search_tool]}),
        ("tools_with_system", [s("You call tools when useful."), u("Weather in Oslo?")], True, {"tools": [weather_tool]}),
        ("tools_no_user", [s("System with tools but no user.")], True, {"tools": [weather_tool]}),
        ("empty_messages", [], True, {}),
        ("long_chat", [s("sys"), u("q1"), a("a1"), u("q2"), a("a2"), u("q3"), a("a3"), u("q4"), a("a4"), u("q5")], True, {}),
        ("extra_keys", [{"role": "user", "content": "Hi", "name": "alice"}, {"role": "assistant", "content": "Hello alice", "name": "bot"}, u("bye")], True, {}),
        ("numeric_content", [u(42)], True, {}),
        ("string_arguments", [u("weather?"), {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Lyon\"}"}}]}], True, {"tools": [weather_tool]}),
        ("tool_dict_content", [u("look up"), {"role": "assistant", "tool_calls": [{"function": {"name": "search", "arguments": {"q": "llamas 🦙", "limit": 3, "exact": True, "score": 0.5, "filter": None}}}]}, {"role": "tool", "content": {"results": ["a", "b"], "count": 2}}], True, {"tools": [search_tool]}),
        ("ipython_role", [u("run it"), {"role": "ipython", "content": "42"}], True, {}),
        ("developer_role", [{"role": "developer", "content": "dev rules"}, u("hi")], True, {}),
        ("newlines_only", [u("\n\n"), a("\n")], True, {}),
        ("assistant_null_content", [u("call it"), {"role": "assistant", "content": None, "tool_calls": [call]}], False, {"tools": [weather_tool]}),
        ("custom_date", [s("sys"), u("What day is it?")], True, {"date_string": "01 Jan 2025", "tools_in_user_message": False, "tools": [weather_tool]}),
        ("builtin_tools", [s("sys"), u("search something")], True, {"builtin_tools": ["brave_search", "code_interpreter", "wolfram_alpha"]}),
        ("builtin_tool_call", [u("search llamas"), {"role": "assistant", "tool_calls": [{"function": {"name": "brave_search", "arguments": {"query": "llamas"}}}]}], True, {"builtin_tools": ["brave_search", "wolfram_alpha"]}),
        # Reasoning templates (Qwen3, DeepSeek-R1, QwQ): chat_template_kwargs and earlier thinking.
        ("thinking_off", [s("sys"), u("2+2?")], True, {"enable_thinking": False}),
        ("thinking_on", [u("2+2?")], True, {"enable_thinking": True}),
        ("thinking_off_tools", [u("Weather in Oslo?")], True, {"enable_thinking": False, "tools": [weather_tool]}),
        ("reasoning_in_history", [u("2+2?"), {"role": "assistant", "content": "4", "reasoning_content": "Two plus two is four."}, u("and 3+3?")], True, {}),
        ("think_tags_in_history", [u("2+2?"), a("<think>\nTwo plus two.\n</think>\n\n4"), u("and 3+3?"), a("<think>\nsix\n</think>\n\n6")], False, {}),
        ("reasoning_tool_turn", tool_turn[:1] + [{"role": "assistant", "content": "", "reasoning_content": "I should call the tool.", "tool_calls": [call]}] + tool_turn[2:], True, {"tools": [weather_tool]}),
        ("mistral_tool_ids", [u("Weather in Paris?"), {"role": "assistant", "content": "", "tool_calls": [{"id": "abcDEF123", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}, {"role": "tool", "tool_call_id": "abcDEF123", "name": "get_weather", "content": "21 C"}], True, {"tools": [weather_tool]}),
    ]
    return convs


TOKENS = {
    "smollm2": ("<|im_start|>", "<|im_end|>"),
    "chatml": ("<s>", "</s>"),
    "qwen2": ("", "<|im_end|>"),
    "qwen2_5": ("", "<|im_end|>"),
    "llama3": ("<|begin_of_text|>", "<|eot_id|>"),
    "llama3_1": ("<|begin_of_text|>", "<|eot_id|>"),
    "llama2_chat": ("<s>", "</s>"),
    "mistral_v0_1": ("<s>", "</s>"),
    "mixtral_instruct": ("<s>", "</s>"),
    "gemma_it": ("<bos>", "<eos>"),
    "gemma3_it": ("<bos>", "<eos>"),
    "qwen3": ("", "<|im_end|>"),
    "qwq": ("", "<|im_end|>"),
    "deepseek_r1_distill_qwen": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "phi3_5_mini": ("<s>", "<|endoftext|>"),
    "phi4_mini": ("<|endoftext|>", "<|endoftext|>"),
    "mistral_nemo": ("<s>", "</s>"),
}


def refresh_smollm2():
    if not MODEL.exists():
        return
    import gguf
    reader = gguf.GGUFReader(str(MODEL))
    field = reader.fields["tokenizer.chat_template"]
    (TEMPLATES / "smollm2.jinja").write_text(bytes(field.parts[field.data[0]]).decode("utf-8"))


def main():
    refresh_smollm2()
    for name, text in FEATURE_TEMPLATES.items():
        (TEMPLATES / name).write_text(text)
    env = make_env()
    template_files = sorted(p.name for p in TEMPLATES.glob("*.jinja"))
    convs = conversations()
    cases = []
    for tname in template_files:
        compiled = env.from_string((TEMPLATES / tname).read_text())
        stem = tname[: -len(".jinja")]
        bos, eos = TOKENS.get(stem, ("<s>", "</s>"))
        for cname, messages, add_gen, extra in convs:
            case = {"template": tname, "conversation": cname, "add_generation_prompt": add_gen,
                    "bos_token": bos, "eos_token": eos}
            # transformers always passes tools and documents (None when absent).
            ctx = {"tools": None, "documents": None}
            ctx.update(extra)
            ctx.update(messages=json.loads(json.dumps(messages)), add_generation_prompt=add_gen,
                       bos_token=bos, eos_token=eos)
            try:
                case["expected"] = compiled.render(**ctx)
            except Exception as e:  # noqa: BLE001 - every jinja2 failure is an expected error
                case["error_type"] = type(e).__name__
                case["error"] = str(e)
            cases.append(case)
    out = {
        "generator": "tests/reference/make_chat_fixtures.py",
        "jinja2_version": jinja2.__version__,
        "conversations": {c[0]: {"messages": c[1], "extra": c[3]} for c in convs},
        "cases": cases,
    }
    path = FIXTURES / "chat_cases.json"
    path.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n")
    n_err = sum(1 for c in cases if "error" in c)
    print(f"wrote {path}: {len(template_files)} templates x {len(convs)} conversations = "
          f"{len(cases)} cases ({n_err} errors), {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
