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


# --- reasoning budget (thinking_token_budget, thinking_budget_tokens) ---
# The oracle: /v1/completions on the same prompt written out (it parses nothing and has no
# budget) gives the model's own first N reasoning tokens with logprobs; with the budget the chat
# reply's first N tokens are those, then the tokens of "</think>", then the answer, which is the
# model's greedy continuation of the prompt + those N tokens + "</think>" (the oracle again).
BUDGET_Q = "Why is the sky blue?"


def raw_tokens(d, prompt, n):
    r = requests.post(d.url("/v1/completions"), json={
        "prompt": prompt, "max_tokens": n, "temperature": 0, "logprobs": 0}, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["logprobs"]["tokens"]


def budgeted_chat(d, budget, field="thinking_token_budget", max_tokens=40, **kw):
    return sdk(d).chat.completions.create(
        model="m", messages=[{"role": "user", "content": BUDGET_Q}], max_tokens=max_tokens,
        temperature=0, logprobs=True, extra_body={field: budget}, **kw)


@pytest.mark.parametrize("field", ["thinking_token_budget", "thinking_budget_tokens"])
@pytest.mark.parametrize("budget", [0, 5, 12])
def test_budget_ends_reasoning_at_exactly_n_tokens_then_the_answer(think_daemon, budget, field):
    plain = raw_tokens(think_daemon, prompt_of(BUDGET_Q), budget + 8)
    assert "</think>" not in "".join(plain)  # unbudgeted, the model would still be thinking
    r = budgeted_chat(think_daemon, budget, field)
    tokens = [t.token for t in r.choices[0].logprobs.content]
    assert tokens[:budget] == plain[:budget]
    assert "".join(tokens[budget:]).startswith("</think>")  # forced right after N tokens
    assert "</think>" not in "".join(tokens[:budget])
    m = r.choices[0].message
    assert extra(m, "reasoning_content") == ("".join(plain[:budget]).strip() or None)
    answer = raw_completion(think_daemon,
                            prompt_of(BUDGET_Q) + "".join(plain[:budget]) + "</think>", 40)
    assert m.content and answer.lstrip().startswith(m.content)


def test_budget_streamed_equals_whole(think_daemon):
    whole = budgeted_chat(think_daemon, 5).choices[0].message
    assert whole.content  # the answer after the forced close
    reasoning, content = "", ""
    for chunk in budgeted_chat(think_daemon, 5, stream=True):
        for ch in chunk.choices:
            reasoning += extra(ch.delta, "reasoning_content") or ""
            content += ch.delta.content or ""
    assert reasoning == extra(whole, "reasoning_content") and content == whole.content


def test_budget_without_reasoning_section_changes_nothing(think_daemon):
    kw = dict(model="m", messages=[{"role": "user", "content": "Say hi."}], max_tokens=12,
              temperature=0)
    off = {"chat_template_kwargs": {"enable_thinking": False}}
    a = sdk(think_daemon).chat.completions.create(**kw, extra_body=off)
    b = sdk(think_daemon).chat.completions.create(
        **kw, extra_body={**off, "thinking_token_budget": 0})
    assert a.choices[0].message.content == b.choices[0].message.content


@pytest.mark.parametrize("body,field", [
    ({"thinking_token_budget": -2}, "thinking_token_budget"),
    ({"thinking_token_budget": "many"}, "thinking_token_budget"),
    ({"thinking_token_budget": 3, "thinking_budget_tokens": 4}, "thinking_budget_tokens"),
])
def test_bad_budgets_are_400_naming_the_field(think_daemon, body, field):
    r = requests.post(think_daemon.url("/v1/chat/completions"), json={
        "model": "m", "messages": [{"role": "user", "content": "q"}], **body}, timeout=60)
    assert r.status_code == 400, r.text
    assert field in r.json()["error"]["message"]


def test_budget_with_speculation_equals_without(think_daemon, tmp_path):
    from conftest import Daemon
    path = tmp_path / "think.jinja"
    path.write_text(THINK_TEMPLATE)
    spec = Daemon(["--server.served-model-name", "m", "--chat-template", str(path),
                   "--reasoning-parser", "qwen3", "--speculative.method", "ngram",
                   "--speculative.draft-token-cost", "0"]).wait_ready()
    try:
        for q in [BUDGET_Q, "Repeat exactly: one two three one two three one two three"]:
            for budget in (2, 9):
                kw = dict(model="m", messages=[{"role": "user", "content": q}], max_tokens=32,
                          temperature=0, logprobs=True,
                          extra_body={"thinking_token_budget": budget})
                want = sdk(think_daemon).chat.completions.create(**kw).choices[0]
                got = sdk(spec).chat.completions.create(**kw).choices[0]
                assert got.message.content == want.message.content
                assert extra(got.message, "reasoning_content") == \
                    extra(want.message, "reasoning_content")
                assert [t.token for t in got.logprobs.content] == \
                    [t.token for t in want.logprobs.content]
        assert spec.metric("llmserve_spec_decode_num_drafts_total") > 0
    finally:
        spec.stop()


def test_grpc_thinking_token_budget(think_daemon):
    """gRPC (llmserve.v1): a raw prompt that opens <think>; the budget finds the section with the
    server's parser, as chat does: the same tokens as the chat request with the same budget."""
    grpc = pytest.importorskip("grpc")
    from grpc_protos import llmserve_v1
    pb2, pb2_grpc = llmserve_v1()
    channel = grpc.insecure_channel(think_daemon.grpc_target)
    try:
        stub = pb2_grpc.GenerationStub(channel)
        req = pb2.GenerateRequest(prompt=prompt_of(BUDGET_Q), max_tokens=40, temperature=0,
                                  thinking_token_budget=5)
        text = stub.Complete(req, timeout=120).choices[0].text
        plain = stub.Complete(pb2.GenerateRequest(prompt=prompt_of(BUDGET_Q), max_tokens=40,
                                                  temperature=0), timeout=120).choices[0].text
        with pytest.raises(grpc.RpcError) as e:
            stub.Complete(pb2.GenerateRequest(prompt="x", thinking_token_budget=-3), timeout=30)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "thinking_token_budget" in e.value.details()
    finally:
        channel.close()
    m = budgeted_chat(think_daemon, 5).choices[0].message
    head = "".join(raw_tokens(think_daemon, prompt_of(BUDGET_Q), 5))
    assert text.startswith(head + "</think>") and text != plain
    assert text == head + "</think>" + text.split("</think>", 1)[1]
    assert text.split("</think>", 1)[1].lstrip() == m.content


def test_budget_composes_with_a_grammar(think_daemon):
    """response_format on a prompt that opened <think>: the grammar holds the block then the JSON;
    the budget closes the block after N tokens inside that grammar, and the JSON still follows
    its schema (jsonschema is the oracle)."""
    schema = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 20}},
              "required": ["answer"], "additionalProperties": False}
    plain = raw_tokens(think_daemon, prompt_of(BUDGET_Q), 14)
    assert "</think>" not in "".join(plain)
    r = budgeted_chat(think_daemon, 6, max_tokens=100, response_format={
        "type": "json_schema", "json_schema": {"name": "a", "schema": schema}})
    tokens = [t.token for t in r.choices[0].logprobs.content]
    assert tokens[:6] == plain[:6]
    assert "".join(tokens[6:]).startswith("</think>")
    m = r.choices[0].message
    assert extra(m, "reasoning_content") == "".join(plain[:6]).strip()
    jsonschema.validate(json.loads(m.content), schema)
