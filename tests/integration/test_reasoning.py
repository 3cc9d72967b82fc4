"""Reasoning output (server.reasoning_parser) through the openai SDK against live daemons.

The default model does not think, so the reasoning is brought about three ways:
  - a chat template whose generation prompt opens "<think>\\n" (as QwQ's and DeepSeek-R1's do):
    every reply is reasoning until the model writes </think>; the oracle is the same prompt,
    written out here by hand, on /v1/completions, which parses nothing;
  - deepseek_r1 on the model's own template with a regex grammar that forces
    "<think>...</think>answer": the oracle is Python's re on the raw text of /v1/completions;
  - Qwen3's real template (tests/fixtures/chat/templates/qwen3.jinja, auto-detected) with tools
    and response_format: the reasoning block may come before them, and what follows is checked
    by jsonschema.
The fields are read as the SDK gives them: message.model_extra["reasoning_content"] (DeepSeek's
name) and ["reasoning"] (vLLM's)."""
import json
import re
import subprocess

import pytest
import requests

from conftest import BIN, MODEL, ROOT, serve_available

openai = pytest.importorskip("openai")
jsonschema = pytest.importorskip("jsonschema")

# Opens the block in the generation prompt unless enable_thinking is false (then it writes the
# closed empty block, as Qwen3's template does).
THINK_TEMPLATE = (
    "{%- for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{ '<think>\\n\\n</think>\\n\\n' }}{%- else %}{{ '<think>\\n' }}{%- endif %}{%- endif %}")


def prompt_of(user, thinking=True):
    head = f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
    return head + ("<think>\n" if thinking else "<think>\n\n</think>\n\n")


def extra(obj, key):
    return (obj.model_extra or {}).get(key)


@pytest.fixture(scope="module")
def think_daemon(tmp_path_factory):
    why = serve_available()
    if why:
        pytest.skip(why)
    from conftest import Daemon
    path = tmp_path_factory.mktemp("tmpl") / "think.jinja"
    path.write_text(THINK_TEMPLATE)
    d = Daemon(["--server.served-model-name", "m", "--chat-template", str(path),
                "--reasoning-parser", "qwen3"]).wait_ready()
    yield d
    d.stop()


@pytest.fixture(scope="module")
def r1_daemon():
    why = serve_available()
    if why:
        pytest.skip(why)
    from conftest import Daemon
    d = Daemon(["--server.served-model-name", "m",
                "--reasoning-parser", "deepseek_r1"]).wait_ready()
    yield d
    d.stop()


@pytest.fixture(scope="module")
def qwen3_daemon():
    why = serve_available()
    if why:
        pytest.skip(why)
    from conftest import Daemon
    tmpl = ROOT / "tests" / "fixtures" / "chat" / "templates" / "qwen3.jinja"
    d = Daemon(["--server.served-model-name", "m", "--chat-template", str(tmpl)]).wait_ready()
    yield d
    d.stop()


def sdk(d):
    return openai.OpenAI(base_url=d.url("/v1"), api_key="unused", max_retries=0, timeout=120)


def raw_completion(d, prompt, max_tokens, finish=None, **fields):
    r = requests.post(d.url("/v1/completions"), json={
        "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, **fields}, timeout=120)
    assert r.status_code == 200, r.text
    if finish is not None:
        assert r.json()["choices"][0]["finish_reason"] == finish, r.text
    return r.json()["choices"][0]["text"]


def test_a_block_the_prompt_opened_is_reasoning_until_closed(think_daemon):
    raw = raw_completion(think_daemon, prompt_of("What is 2+2?"), 6, finish="length")
    assert "</think>" not in raw  # the model never closes it: all reasoning, cut by max_tokens
    r = sdk(think_daemon).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "What is 2+2?"}], max_tokens=6,
        temperature=0)
    m = r.choices[0].message
    assert extra(m, "reasoning_content") == raw.strip()
    assert extra(m, "reasoning") == raw.strip()
    assert m.content is None
    assert r.choices[0].finish_reason == "length"


def test_enable_thinking_false_reaches_the_template(think_daemon):
    raw = raw_completion(think_daemon, prompt_of("Say hi.", thinking=False), 10)
    r = sdk(think_daemon).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Say hi."}], max_tokens=10,
        temperature=0, extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    m = r.choices[0].message
    assert m.content == raw
    assert extra(m, "reasoning_content") is None
    assert "reasoning_content" in m.model_extra  # the parser is on: present, null


def test_streamed_reasoning_deltas_join_to_the_message(think_daemon):
    client = sdk(think_daemon)
    kw = dict(model="m", messages=[{"role": "user", "content": "Name a color."}], max_tokens=16,
              temperature=0)
    whole = client.chat.completions.create(**kw).choices[0].message
    reasoning, vllm_reasoning, content = "", "", ""
    for chunk in client.chat.completions.create(stream=True, **kw):
        for ch in chunk.choices:
            reasoning += extra(ch.delta, "reasoning_content") or ""
            vllm_reasoning += extra(ch.delta, "reasoning") or ""
            content += ch.delta.content or ""
    assert reasoning == extra(whole, "reasoning_content") and reasoning
    assert vllm_reasoning == reasoning
    assert content == ""


def test_responses_api_gives_a_reasoning_item(think_daemon):
    story = "Tell me a long story about a dragon."
    raw = raw_completion(think_daemon, prompt_of(story), 5, finish="length")
    r = sdk(think_daemon).responses.create(model="m", input=story, max_output_tokens=5,
                                           temperature=0)
    assert r.output[0].type == "reasoning"
    assert r.output[0].content[0].type == "reasoning_text"
    assert r.output[0].content[0].text == raw.strip()
    assert r.status == "incomplete"


FORCED = r"<think>[a-z][a-z ]{0,23}</think>(Yes|No)"


def expected_split(raw):
    m = re.fullmatch(r"<think>(.*)</think>(.*)", raw, re.S)
    assert m and re.fullmatch(FORCED, raw), raw
    return m.group(1).strip(), m.group(2)


@pytest.mark.parametrize("stream", [False, True])
def test_tags_a_grammar_forces_split_into_reasoning_and_content(r1_daemon, stream):
    so = {"structured_outputs": {"regex": FORCED}}
    rendered = requests.post(r1_daemon.url("/v1/chat/completions/render"), json={
        "messages": [{"role": "user", "content": "Is the sky blue?"}]}, timeout=30)
    assert rendered.status_code == 200, rendered.text
    raw = raw_completion(r1_daemon, rendered.json()["token_ids"], 40, **so)
    kw = dict(model="m", messages=[{"role": "user", "content": "Is the sky blue?"}],
              max_tokens=40, temperature=0, extra_body=so)
    client = sdk(r1_daemon)
    if not stream:
        m = client.chat.completions.create(**kw).choices[0].message
        reasoning, content = extra(m, "reasoning_content"), m.content
    else:
        reasoning, content = "", ""
        for chunk in client.chat.completions.create(stream=True, **kw):
            for ch in chunk.choices:
                reasoning += extra(ch.delta, "reasoning_content") or ""
                content += ch.delta.content or ""
    assert (reasoning, content) == expected_split(raw)


def test_n_choices_each_split_their_own_reply(r1_daemon):
    kw = dict(model="m", messages=[{"role": "user", "content": "Is water wet?"}], max_tokens=40,
              temperature=1.0, seed=7, n=3, extra_body={"structured_outputs": {"regex": FORCED}})
    client = sdk(r1_daemon)
    whole = client.chat.completions.create(**kw)
    streamed = {}
    for chunk in client.chat.completions.create(stream=True, **kw):
        for ch in chunk.choices:
            r, c = streamed.get(ch.index, ("", ""))
            streamed[ch.index] = (r + (extra(ch.delta, "reasoning_content") or ""),
                                  c + (ch.delta.content or ""))
    assert len(whole.choices) == 3 and len(streamed) == 3
    for ch in whole.choices:
        pair = (extra(ch.message, "reasoning_content"), ch.message.content)
        assert re.fullmatch(FORCED, f"<think>{pair[0]}</think>{pair[1]}"), pair
        assert streamed[ch.index] == pair


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}},
                   "required": ["city"], "additionalProperties": False}}}


@pytest.mark.parametrize("thinking", [True, False])
def test_qwen3_template_tool_calls_with_reasoning_on(qwen3_daemon, thinking):
    assert "reasoning parser qwen3" in qwen3_daemon.logs()  # auto-detected from the template
    r = sdk(qwen3_daemon).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Weather in Oslo?"}], tools=[WEATHER],
        tool_choice="required", max_tokens=120, temperature=0,
        extra_body={"chat_template_kwargs": {"enable_thinking": thinking}})
    ch = r.choices[0]
    assert ch.finish_reason == "tool_calls", ch
    for call in ch.message.tool_calls:
        assert call.function.name == "get_weather"
        jsonschema.validate(json.loads(call.function.arguments),
                            WEATHER["function"]["parameters"])
    reasoning = extra(ch.message, "reasoning_content")
    assert reasoning is None or "<tool_call>" not in reasoning


def test_qwen3_template_structured_output_with_reasoning_on(qwen3_daemon):
    schema = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 30}},
              "required": ["answer"], "additionalProperties": False}
    r = sdk(qwen3_daemon).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Capital of France? JSON."}],
        max_tokens=120, temperature=0,
        response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": schema}})
    m = r.choices[0].message
    jsonschema.validate(json.loads(m.content), schema)
    assert "reasoning_content" in m.model_extra


@pytest.mark.parametrize("kwargs, field", [
    ("yes", "chat_template_kwargs"),
    ({"messages": []}, "chat_template_kwargs.messages"),
    ({"add_generation_prompt": False}, "chat_template_kwargs.add_generation_prompt"),
])
def test_bad_chat_template_kwargs_are_400(think_daemon, kwargs, field):
    r = requests.post(think_daemon.url("/v1/chat/completions"), json={
        "messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": kwargs},
        timeout=30)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["message"].startswith(field + ":"), r.text


def test_an_unknown_parser_stops_start_up_naming_the_key():
    why = serve_available()
    if why:
        pytest.skip(why)
    out = subprocess.run([str(BIN), "serve", "--model", str(MODEL), "--reasoning-parser",
                          "deepseek"], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "server.reasoning_parser" in out.stdout + out.stderr
