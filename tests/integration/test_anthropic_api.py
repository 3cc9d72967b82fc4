"""POST /v1/messages and /v1/messages/count_tokens (Anthropic's Messages API) through the
`anthropic` SDK from PyPI: messages.create, messages.stream (text, tool use with
input_json_delta, thinking), count_tokens, a tool loop with tool_result, errors. Every response
and every raw stream event is also validated by the SDK's own pydantic models (strict
validation, not the SDK's lenient construct). The oracle for the tokens is the equivalent
/v1/chat/completions request at temperature 0 (through the openai SDK), and for thinking the
raw /v1/completions text of the same prompt."""
import json

import httpx
import pytest
import requests

anthropic = pytest.importorskip("anthropic")
jsonschema = pytest.importorskip("jsonschema")
pydantic = pytest.importorskip("pydantic")
from anthropic import types as at  # noqa: E402

from conftest import serve_available  # noqa: E402

WEATHER = {
    "name": "get_weather",
    "description": "Get the current weather in a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string",
                                                         "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"],
    },
}
CHAT_WEATHER = {"type": "function", "function": {"name": WEATHER["name"],
                                                 "description": WEATHER["description"],
                                                 "parameters": WEATHER["input_schema"]}}
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]

EVENT = pydantic.TypeAdapter(at.RawMessageStreamEvent)


@pytest.fixture(scope="module")
def claude(daemon):
    return anthropic.Anthropic(base_url=daemon.url(""), api_key="unused", max_retries=0,
                               timeout=120)


def sdk(body):
    """A request body as SDK keyword arguments: this SDK (2.x) has no sampling parameters, so
    temperature travels in extra_body (the server reads it as Anthropic's field)."""
    kw = {k: v for k, v in body.items() if k not in ("temperature", "stream")}
    if "temperature" in body:
        kw["extra_body"] = {**kw.get("extra_body", {}), "temperature": body["temperature"]}
    return kw


GREEDY = {"extra_body": {"temperature": 0}}


def raw_events(daemon, body, headers=None):
    """The SSE stream as (event name, data) pairs, each data validated by the SDK's model."""
    out = []
    with httpx.stream("POST", daemon.url("/v1/messages"), json={**body, "stream": True},
                      headers=headers or {"x-api-key": "unused",
                                          "anthropic-version": "2023-06-01"},
                      timeout=120) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        name = None
        for line in r.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
                assert data["type"] == name
                if name not in ("ping", "error"):  # the SDK skips pings; errors raise
                    EVENT.validate_python(data, strict=True)
                out.append((name, data))
    return out


def check_sequence(events):
    """Anthropic's order: message_start, ping, blocks (start, deltas, stop), message_delta,
    message_stop; block indexes count from 0."""
    names = [n for n, _ in events]
    assert names[0] == "message_start" and names[1] == "ping"
    assert names[-2:] == ["message_delta", "message_stop"]
    open_index, next_index = None, 0
    for name, data in events[2:-2]:
        if name == "content_block_start":
            assert open_index is None and data["index"] == next_index
            open_index = data["index"]
        elif name == "content_block_delta":
            assert data["index"] == open_index
        elif name == "content_block_stop":
            assert data["index"] == open_index
            open_index, next_index = None, next_index + 1
        else:
            assert name == "ping", name
    assert open_index is None


def chat(client, model_id, messages, max_tokens, **kw):
    return client.chat.completions.create(model=model_id, messages=messages, temperature=0,
                                          max_tokens=max_tokens, **kw)


def test_create_text_equals_chat_completions(claude, client, model_id):
    msg = claude.messages.create(model=model_id, max_tokens=24, **GREEDY,
                                 system="You are terse.",
                                 messages=[{"role": "user", "content": "Name three colors."}])
    at.Message.model_validate(msg.model_dump(), strict=True)
    ref = chat(client, model_id, [{"role": "system", "content": "You are terse."},
                                  {"role": "user", "content": "Name three colors."}], 24)
    assert msg.type == "message" and msg.role == "assistant" and msg.id.startswith("msg_")
    assert [b.type for b in msg.content] == ["text"]
    assert msg.content[0].text == ref.choices[0].message.content
    assert msg.stop_reason == {"stop": "end_turn", "length": "max_tokens"}[
        ref.choices[0].finish_reason]
    u = msg.usage
    assert u.input_tokens + u.cache_read_input_tokens == ref.usage.prompt_tokens
    assert u.output_tokens == ref.usage.completion_tokens
    assert u.cache_creation_input_tokens == 0
    # Asked again, the prompt's full blocks come from the prefix cache (chat's cached_tokens),
    # and input_tokens are only the rest.
    again = claude.messages.create(model=model_id, max_tokens=24, **GREEDY,
                                   system="You are terse.",
                                   messages=[{"role": "user", "content": "Name three colors."}])
    ref2 = chat(client, model_id, [{"role": "system", "content": "You are terse."},
                                   {"role": "user", "content": "Name three colors."}], 24)
    cached = ref2.usage.prompt_tokens_details.cached_tokens
    assert again.usage.cache_read_input_tokens == cached > 0
    assert again.usage.input_tokens == ref2.usage.prompt_tokens - cached


def test_stream_text_events(claude, daemon, model_id):
    body = {"model": model_id, "max_tokens": 20, "temperature": 0,
            "messages": [{"role": "user", "content": "Tell me about the sea."}]}
    events = raw_events(daemon, body)
    check_sequence(events)
    text = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta")
    assert all(d["delta"]["type"] == "text_delta" for n, d in events
               if n == "content_block_delta")
    with claude.messages.stream(**sdk(body)) as s:
        typed = list(s)
        final = s.get_final_message()
    assert {type(e).__name__ for e in typed} >= {"RawMessageStartEvent", "TextEvent",
                                                 "ParsedContentBlockStopEvent",
                                                 "RawMessageDeltaEvent", "ParsedMessageStopEvent"}
    assert final.content[0].text == text
    plain = claude.messages.create(**sdk(body))
    assert plain.content[0].text == text
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == plain.stop_reason
    assert delta["usage"]["output_tokens"] == plain.usage.output_tokens


def test_max_tokens_and_stop_sequence(claude, model_id):
    base = dict(model=model_id, **GREEDY,
                messages=[{"role": "user", "content": "Write a long story about a dragon."}])
    long = claude.messages.create(max_tokens=16, **base)
    assert long.stop_reason == "max_tokens" and long.usage.output_tokens == 16
    words = long.content[0].text.split()
    stop = next(w for w in words[2:] if len(w) > 2)
    cut = claude.messages.create(max_tokens=16, stop_sequences=[stop], **base)
    assert cut.stop_reason == "stop_sequence" and cut.stop_sequence == stop
    assert cut.content[0].text == long.content[0].text[:long.content[0].text.index(stop)]


def test_stream_tool_use_input_json_delta(claude, client, daemon, model_id):
    body = {"model": model_id, "max_tokens": 60, "temperature": 0, "tools": [WEATHER],
            "tool_choice": {"type": "tool", "name": "get_weather"}, "messages": QUESTION}
    events = raw_events(daemon, body)
    check_sequence(events)
    starts = [d for n, d in events if n == "content_block_start"]
    assert [s["content_block"]["type"] for s in starts] == ["tool_use"]
    assert starts[0]["content_block"]["name"] == "get_weather"
    assert starts[0]["content_block"]["id"].startswith("toolu_")
    pieces = [d["delta"]["partial_json"] for n, d in events if n == "content_block_delta"]
    assert len(pieces) > 1  # streamed as generated, not in one piece at the end
    args = json.loads("".join(pieces))
    jsonschema.validate(args, WEATHER["input_schema"])
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    with claude.messages.stream(**sdk(body)) as s:
        kinds = {e.type for e in s}
        final = s.get_final_message()
    assert "input_json" in kinds
    assert final.content[0].type == "tool_use" and final.content[0].input == args
    assert final.stop_reason == "tool_use"
    ref = chat(client, model_id, QUESTION, 60, tools=[CHAT_WEATHER],
               tool_choice={"type": "function", "function": {"name": "get_weather"}})
    assert json.loads(ref.choices[0].message.tool_calls[0].function.arguments) == args


def test_tool_loop_with_tool_result(claude, client, model_id):
    first = claude.messages.create(model=model_id, max_tokens=60, **GREEDY,
                                   tools=[WEATHER], tool_choice={"type": "any"},
                                   messages=QUESTION)
    at.Message.model_validate(first.model_dump(), strict=True)
    assert first.stop_reason == "tool_use"
    call = next(b for b in first.content if b.type == "tool_use")
    jsonschema.validate(call.input, WEATHER["input_schema"])
    history = QUESTION + [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                      "content": [{"type": "text", "text": "Sunny, 25 C."}]}]}]
    second = claude.messages.create(model=model_id, max_tokens=40, **GREEDY,
                                    tools=[WEATHER], tool_choice={"type": "none"},
                                    messages=history)
    at.Message.model_validate(second.model_dump(), strict=True)
    assert [b.type for b in second.content] == ["text"] and second.stop_reason != "tool_use"
    # The same conversation in chat's terms gives the same tokens.
    ref = chat(client, model_id, QUESTION + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call.id, "type": "function",
             "function": {"name": call.name, "arguments": json.dumps(call.input)}}]},
        {"role": "tool", "tool_call_id": call.id, "content": "Sunny, 25 C."}], 40,
        tools=[CHAT_WEATHER], tool_choice="none")
    assert second.content[0].text == ref.choices[0].message.content
    assert second.usage.input_tokens + second.usage.cache_read_input_tokens == \
        ref.usage.prompt_tokens


def test_assistant_prefill_is_continued(claude, client, model_id):
    convo = [{"role": "user", "content": "What is the capital of France?"},
             {"role": "assistant", "content": "The capital of France is"}]
    msg = claude.messages.create(model=model_id, max_tokens=12, **GREEDY, messages=convo)
    ref = client.chat.completions.create(model=model_id, messages=convo, temperature=0,
                                         max_tokens=12,
                                         extra_body={"continue_final_message": True,
                                                     "add_generation_prompt": False})
    assert msg.content[0].text == ref.choices[0].message.content
    assert msg.usage.input_tokens + msg.usage.cache_read_input_tokens == ref.usage.prompt_tokens


def test_count_tokens_uses_the_generation_template(claude, client, model_id):
    for kw, chat_kw in (({}, {}), ({"tools": [WEATHER]}, {"tools": [CHAT_WEATHER]})):
        n = claude.messages.count_tokens(model=model_id, system="Be brief.", messages=QUESTION,
                                         **kw)
        assert isinstance(n, at.MessageTokensCount)
        ref = chat(client, model_id, [{"role": "system", "content": "Be brief."}] + QUESTION, 1,
                   **chat_kw)
        assert n.input_tokens == ref.usage.prompt_tokens
        gen = claude.messages.create(model=model_id, max_tokens=1, system="Be brief.",
                                     messages=QUESTION, **kw)
        assert n.input_tokens == gen.usage.input_tokens + gen.usage.cache_read_input_tokens


def test_errors_in_anthropic_shape(claude, daemon, model_id):
    with pytest.raises(anthropic.BadRequestError) as e:
        claude.messages.create(model=model_id, max_tokens=5, messages=[
            {"role": "user", "content": [{"type": "text", "text": "look"},
                                         {"type": "image", "source": {
                                             "type": "base64", "media_type": "image/png",
                                             "data": "iVBORw0KGgo="}}]}])
    assert e.value.status_code == 400
    assert e.value.body["type"] == "error"
    assert e.value.body["error"]["type"] == "invalid_request_error"
    assert e.value.body["error"]["message"].startswith("messages[0].content[1]: image")
    at.ErrorResponse.model_validate(e.value.response.json(), strict=False) \
        if hasattr(at, "ErrorResponse") else None
    r = requests.post(daemon.url("/v1/messages"), json={"model": model_id, "messages": QUESTION})
    assert r.status_code == 400
    assert r.json() == {"type": "error", "error": {"type": "invalid_request_error",
                                                   "message": "max_tokens: is required"}}
    r = requests.post(daemon.url("/v1/messages/nope"), json={})
    assert r.status_code == 404 and r.json()["error"]["type"] == "not_found_error"
    with pytest.raises(anthropic.BadRequestError) as e:
        claude.messages.create(model=model_id, max_tokens=5, messages=QUESTION,
                               tools=[{"type": "web_search_20250305", "name": "web_search"}])
    assert e.value.body["error"]["message"].startswith("tools[0].type:")


def test_unknown_fields_and_blocks_tolerated(claude, model_id):
    msg = claude.messages.create(
        model=model_id, max_tokens=8, metadata={"user_id": "u-1"},
        system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": "Hi"},
                  {"role": "assistant", "content": [
                      {"type": "redacted_thinking", "data": "opaque"},
                      {"type": "text", "text": "Hello."}]},
                  {"role": "user", "content": [{"type": "text", "text": "Again",
                                                "cache_control": {"type": "ephemeral"}}]}],
        extra_body={"some_future_field": {"x": 1}, "temperature": 0,
                    "context_management": {"edits": []}},
        extra_headers={"anthropic-beta": "interleaved-thinking-2025-05-14"})
    at.Message.model_validate(msg.model_dump(), strict=True)
    plain = claude.messages.create(
        model=model_id, max_tokens=8, **GREEDY, system="Be brief.",
        messages=[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."},
                  {"role": "user", "content": "Again"}])
    assert msg.content[0].text == plain.content[0].text


def test_volatile_system_line_is_stripped(claude, model_id):
    """Claude Code's billing line (its suffix varies per conversation) renders as nothing."""
    def count(system):
        return claude.messages.count_tokens(model=model_id, system=system,
                                            messages=QUESTION).input_tokens
    with_line = [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.337.ef8; "
                                          "cc_entrypoint=sdk-cli;"},
                 {"type": "text", "text": "You are an agent."}]
    assert count(with_line) == count("You are an agent.")


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    why = serve_available()
    if why:
        pytest.skip(why)
    from conftest import Daemon
    d = Daemon(["--server.api-keys", "sk-right"]).wait_ready()
    yield d
    d.stop()


def test_api_key_as_x_api_key_or_bearer(keyed):
    model = requests.get(keyed.url("/v1/models"), headers={"Authorization": "Bearer sk-right"},
                         timeout=10).json()["data"][0]["id"]
    kw = dict(model=model, max_tokens=2, messages=QUESTION)
    ok1 = anthropic.Anthropic(base_url=keyed.url(""), api_key="sk-right", max_retries=0)
    assert ok1.messages.create(**kw).type == "message"
    ok2 = anthropic.Anthropic(base_url=keyed.url(""), auth_token="sk-right", max_retries=0)
    assert ok2.messages.create(**kw).type == "message"
    bad = anthropic.Anthropic(base_url=keyed.url(""), api_key="sk-wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as e:
        bad.messages.create(**kw)
    assert e.value.status_code == 401
    assert e.value.body["error"]["type"] == "authentication_error"
    # x-api-key is this API's header only: the OpenAI routes keep Authorization.
    r = requests.post(keyed.url("/v1/chat/completions"), headers={"x-api-key": "sk-right"},
                      json={"model": model, "messages": QUESTION, "max_tokens": 1})
    assert r.status_code == 401 and "error" in r.json() and "type" not in r.json()


THINK_TEMPLATE = (
    "{%- for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{ '<think>\\n\\n</think>\\n\\n' }}{%- else %}{{ '<think>\\n' }}{%- endif %}{%- endif %}")


@pytest.fixture(scope="module")
def think(tmp_path_factory):
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


def test_thinking_stream(think):
    claude = anthropic.Anthropic(base_url=think.url(""), api_key="unused", max_retries=0,
                                 timeout=120)
    user = "Why is the sky blue?"
    # Anthropic's budget must be >= 1024 and below max_tokens; the stop keeps the reply short.
    body = dict(model="m", max_tokens=1100, temperature=0, stop_sequences=["."],
                thinking={"type": "enabled", "budget_tokens": 1024},
                messages=[{"role": "user", "content": user}])
    events = raw_events(think, {**body, "messages": body["messages"]})
    check_sequence(events)
    # The oracle: the same prompt, written out, on /v1/completions (which parses nothing).
    raw = requests.post(think.url("/v1/completions"), json={
        "model": "m", "max_tokens": 1100, "temperature": 0, "stop": ["."],
        "prompt": f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n<think>\n"},
        timeout=120).json()["choices"][0]["text"]
    reasoning = raw.split("</think>")[0].strip()
    thought = "".join(d["delta"]["thinking"] for n, d in events
                      if n == "content_block_delta" and d["delta"]["type"] == "thinking_delta")
    assert thought == reasoning and thought
    assert events[2][1]["content_block"]["type"] == "thinking"
    with claude.messages.stream(**sdk(body)) as s:
        kinds = {e.type for e in s}
        final = s.get_final_message()
    assert "thinking" in kinds
    assert final.content[0].type == "thinking" and final.content[0].thinking == reasoning
    off = claude.messages.count_tokens(model="m", thinking={"type": "disabled"},
                                       messages=body["messages"]).input_tokens
    on = claude.messages.count_tokens(model="m", thinking={"type": "enabled",
                                                           "budget_tokens": 1024},
                                      messages=body["messages"]).input_tokens
    assert off > on  # disabled: the template writes the closed, empty block
    quiet = claude.messages.create(**sdk({**body, "thinking": {"type": "disabled"}}))
    assert [b.type for b in quiet.content] == ["text"]


def test_thinking_budget_is_enforced(think):
    """budget_tokens 1024: the thinking block is the model's first 1024 reasoning tokens (the
    oracle: /v1/completions on the prompt written out, which has no budget), then the close is
    forced and a text block follows within max_tokens."""
    claude = anthropic.Anthropic(base_url=think.url(""), api_key="unused", max_retries=0,
                                 timeout=600)
    user = "List every integer from 1 to 5000, comma separated."
    prompt = f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n<think>\n"
    raw = requests.post(think.url("/v1/completions"), json={
        "model": "m", "max_tokens": 1024, "temperature": 0, "prompt": prompt},
        timeout=600).json()["choices"][0]
    assert raw["finish_reason"] == "length" and "</think>" not in raw["text"]
    m = claude.messages.create(**sdk(dict(
        model="m", max_tokens=1040, temperature=0,
        thinking={"type": "enabled", "budget_tokens": 1024},
        messages=[{"role": "user", "content": user}])))
    assert [b.type for b in m.content] == ["thinking", "text"]
    assert m.content[0].thinking == raw["text"].strip()
    assert m.usage.output_tokens == 1040 and m.stop_reason == "max_tokens"


@pytest.mark.parametrize("budget,max_tokens,message", [
    (1023, 2048, "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"),
    (2048, 2048, "`max_tokens` must be greater than `thinking.budget_tokens`"),
])
def test_thinking_budget_errors_as_anthropic_gives_them(think, budget, max_tokens, message):
    claude = anthropic.Anthropic(base_url=think.url(""), api_key="unused", max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as e:
        claude.messages.create(model="m", max_tokens=max_tokens,
                               thinking={"type": "enabled", "budget_tokens": budget},
                               messages=[{"role": "user", "content": "q"}])
    assert e.value.body["error"]["type"] == "invalid_request_error"
    assert e.value.body["error"]["message"].startswith(message)


@pytest.fixture(scope="module")
def hermes():
    """Qwen3's real template: tools in the Hermes format (<tool_call> blocks)."""
    why = serve_available()
    if why:
        pytest.skip(why)
    from conftest import Daemon, ROOT
    tmpl = ROOT / "tests" / "fixtures" / "chat" / "templates" / "qwen3.jinja"
    d = Daemon(["--server.served-model-name", "m", "--chat-template", str(tmpl)]).wait_ready()
    yield d
    d.stop()


def test_hermes_tool_arguments_stream_as_generated(hermes):
    import openai
    body = {"model": "m", "max_tokens": 80, "temperature": 0, "tools": [WEATHER],
            "tool_choice": {"type": "tool", "name": "get_weather"}, "messages": QUESTION}
    events = raw_events(hermes, body)
    check_sequence(events)
    starts = [d for n, d in events if n == "content_block_start"]
    assert starts and all(s["content_block"]["type"] == "tool_use" for s in starts)
    args = []
    for s in starts:
        pieces = [d["delta"]["partial_json"] for n, d in events
                  if n == "content_block_delta" and d["index"] == s["index"]]
        assert len(pieces) > 1
        args.append(json.loads("".join(pieces)))
    ref = openai.OpenAI(base_url=hermes.url("/v1"), api_key="unused").chat.completions.create(
        model="m", messages=QUESTION, temperature=0, max_tokens=80, tools=[CHAT_WEATHER],
        tool_choice={"type": "function", "function": {"name": "get_weather"}})
    calls = ref.choices[0].message.tool_calls
    assert [s["content_block"]["name"] for s in starts] == [c.function.name for c in calls]
    assert args == [json.loads(c.function.arguments) for c in calls]
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
