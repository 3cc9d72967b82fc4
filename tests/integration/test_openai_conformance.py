"""OpenAI API conformance, checked against the openai SDK's own models (CI-runnable).

OpenAI's OpenAPI spec cannot be fetched at test time, so the schemas come from the openai
Python SDK (tests/requirements.txt pins it), whose pydantic models Stainless generates from that
spec. A matrix of requests (chat, completions, responses, models list and retrieve; streaming
and not; tools, logprobs, n, integer fields sent as integral floats) goes to the daemon as raw
HTTP, and every JSON body and every SSE event is checked twice:

1. ``Model.model_validate(body, strict=True)``: types exact (an int is not a string, a Literal
   is that literal), with the SDK's extra="allow" (vLLM's extensions such as `stop_reason` or
   `reasoning_content` are allowed).
2. Required keys, walked recursively over the model's ``model_fields`` along the raw JSON: a key
   is required when ``field.is_required()``, or when it is listed in SPEC_REQUIRED below.
   Why the list: Stainless writes a spec field that is *required but nullable* (OpenAI's
   ``refusal``, ``logprobs`` on a choice, a Response's ``error``...) as ``Optional[X] = None``,
   exactly like a field that may be left out, so ``is_required()`` cannot tell them apart and a
   server that omits them passes validation while strict clients (and the spec) reject it.
   The SDK's field order does not tell either (tried: required-then-optional blocks are not
   reliably ordered). So the nullable-required fields of the objects this server emits are
   listed by hand from the spec's `required` arrays. A field newer than the pinned SDK (the
   Responses usage's ``input_tokens_details.cache_write_tokens``) is listed the same way.
   Fields that are optional in the spec (a chunk choice's ``logprobs``, a delta's
   ``refusal``) are deliberately not listed.

Two places where OpenAI's own API sends what the SDK's types do not allow are relaxed, as
commented where they are: a completion stream chunk's `finish_reason: null` before the last
chunk, and echo's null first-token logprob.

Every error body must be OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``
with all four keys present (param and code may be null; ErrorObject's nullable-required ones).

Failed on the code before issue 51's fixes: the integral-float cases (8.0 rejected with 400),
models retrieve (404), and the required-field checks on chat messages / chat logprobs
(``refusal``), Responses usage (``cache_write_tokens``) and echoed function tools (``strict``).
"""
import inspect
import json
import types
import typing
from typing import Annotated, Union, get_args, get_origin

import pydantic
import pytest
import requests

openai = pytest.importorskip("openai")

from openai.types import Completion, ErrorObject, Model  # noqa: E402
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessage  # noqa: E402
from openai.types.chat import chat_completion, chat_completion_chunk  # noqa: E402
from openai.types.completion_choice import CompletionChoice  # noqa: E402
from openai.types.responses import FunctionTool, Response, ResponseStreamEvent  # noqa: E402
from openai.types.responses.response_error_event import ResponseErrorEvent  # noqa: E402
from openai.types.responses.response_usage import InputTokensDetails  # noqa: E402

# Nullable fields the spec requires (see the module docstring), by SDK class.
SPEC_REQUIRED = {
    chat_completion.Choice: {"logprobs"},
    chat_completion.ChoiceLogprobs: {"content", "refusal"},
    ChatCompletionMessage: {"content", "refusal"},
    chat_completion_chunk.Choice: {"finish_reason"},
    chat_completion_chunk.ChoiceLogprobs: {"content", "refusal"},
    CompletionChoice: {"logprobs"},
    Response: {"error", "incomplete_details", "instructions", "metadata", "temperature", "top_p"},
    FunctionTool: {"parameters", "strict"},
    InputTokensDetails: {"cache_write_tokens"},  # newer than the pinned SDK
    ErrorObject: {"code", "param"},
    ResponseErrorEvent: {"code", "param"},
}

_ADAPTERS = {}


def _adapter(tp):
    key = repr(tp)
    if key not in _ADAPTERS:
        _ADAPTERS[key] = pydantic.TypeAdapter(tp)
    return _ADAPTERS[key]


def _fits(tp, value) -> bool:
    try:
        _adapter(tp).validate_python(value, strict=True)
        return True
    except pydantic.ValidationError:
        return False


def missing_keys(value, tp, path="$") -> list:
    """Required keys absent from the raw JSON `value` read as type `tp` (paths like
    $.choices[0].message.refusal)."""
    origin = get_origin(tp)
    if origin is Annotated:
        return missing_keys(value, get_args(tp)[0], path)
    if inspect.isclass(tp) and issubclass(tp, pydantic.BaseModel):
        if not isinstance(value, dict):
            return []
        out = []
        extra = SPEC_REQUIRED.get(tp, set())
        for name, field in tp.model_fields.items():
            key = field.alias or name
            if key not in value:
                if field.is_required() or key in extra:
                    out.append(f"{path}.{key}")
                continue
            out += missing_keys(value[key], field.annotation, f"{path}.{key}")
        out += [f"{path}.{k}" for k in sorted(extra) if k not in tp.model_fields and k not in value]
        return out
    if origin in (Union, types.UnionType):
        if value is None:
            return []
        for member in get_args(tp):
            if member is type(None):
                continue
            if _fits(member, value):
                return missing_keys(value, member, path)
        return []
    if origin in (list, typing.List) and isinstance(value, list):
        (item,) = get_args(tp) or (typing.Any,)
        return [m for i, v in enumerate(value) for m in missing_keys(v, item, f"{path}[{i}]")]
    if origin in (dict, typing.Dict) and isinstance(value, dict):
        args = get_args(tp)
        item = args[1] if len(args) == 2 else typing.Any
        return [m for k, v in value.items() for m in missing_keys(v, item, f"{path}.{k}")]
    return []


def check(value, tp, what):
    """Strict validation plus the required-key walk; fails naming what and where."""
    try:
        _adapter(tp).validate_python(value, strict=True)
    except pydantic.ValidationError as e:
        pytest.fail(f"{what}: does not validate as {getattr(tp, '__name__', tp)}:\n{e}\n"
                    f"{json.dumps(value)[:2000]}")
    missing = missing_keys(value, tp)
    assert not missing, f"{what}: required keys missing: {missing}\n{json.dumps(value)[:2000]}"


def check_error(r: requests.Response, what):
    body = r.json()
    assert set(body) == {"error"}, f"{what}: not OpenAI's error shape: {body}"
    check(body["error"], ErrorObject, what + " (error)")


def sse_payloads(r: requests.Response):
    """The data of each SSE event, decoded as UTF-8 whatever the headers say."""
    buf = b""
    for chunk in r.iter_content(chunk_size=None):
        buf += chunk
        while b"\n\n" in buf:
            block, buf = buf.split(b"\n\n", 1)
            data = [ln[5:].lstrip() for ln in block.split(b"\n") if ln.startswith(b"data:")]
            if data:
                yield b"\n".join(data).decode("utf-8")


TOOLS_CHAT = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]
TOOLS_RESPONSES = [
    {"type": "function", "name": "get_weather", "description": "Weather for a city",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                    "required": ["city"]}},
    {"type": "function", "name": "get_time", "strict": False,
     "parameters": {"type": "object", "properties": {}}},
]
HELLO = [{"role": "user", "content": "Say hello."}]

# (id, path, body): every body is sent as is; stream bodies are read as SSE.
CASES = [
    ("chat", "/v1/chat/completions", {"messages": HELLO, "max_tokens": 6}),
    ("chat-int-floats", "/v1/chat/completions",
     {"messages": HELLO, "max_tokens": 6.0, "seed": 7.0, "n": 1.0, "temperature": 0.5}),
    ("chat-n2-logprobs", "/v1/chat/completions",
     {"messages": HELLO, "max_tokens": 4, "n": 2, "logprobs": True, "top_logprobs": 2.0,
      "temperature": 0.8, "seed": 3}),
    ("chat-tools", "/v1/chat/completions",
     {"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": TOOLS_CHAT,
      "tool_choice": "required", "max_tokens": 40}),
    ("chat-stream", "/v1/chat/completions",
     {"messages": HELLO, "max_tokens": 6, "stream": True,
      "stream_options": {"include_usage": True}}),
    ("chat-stream-logprobs", "/v1/chat/completions",
     {"messages": HELLO, "max_tokens": 4.0, "stream": True, "logprobs": True,
      "top_logprobs": 1}),
    ("chat-stream-tools", "/v1/chat/completions",
     {"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": TOOLS_CHAT,
      "tool_choice": "required", "max_tokens": 40, "stream": True}),
    ("completion", "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 6}),
    ("completion-int-floats", "/v1/completions",
     {"prompt": "Once upon a time", "max_tokens": 6.0, "seed": 1.0, "n": 2.0,
      "logprobs": 2.0, "temperature": 0.7}),
    # echo without logprobs: with them the prompt's first token has logprob null, as OpenAI's
    # legacy API and vLLM send it, which the SDK's List[float] does not allow.
    ("completion-echo", "/v1/completions",
     {"prompt": "Once upon a time", "max_tokens": 3, "echo": True}),
    ("completion-stream", "/v1/completions",
     {"prompt": "Once upon a time", "max_tokens": 5, "stream": True, "logprobs": 1,
      "stream_options": {"include_usage": True}}),
    ("responses", "/v1/responses", {"input": "Say hello.", "max_output_tokens": 8}),
    ("responses-int-floats", "/v1/responses",
     {"input": "Say hello.", "max_output_tokens": 8.0, "seed": 2.0, "top_k": 5.0}),
    ("responses-tools", "/v1/responses",
     {"input": "Weather in Paris?", "tools": TOOLS_RESPONSES, "tool_choice": "required",
      "max_output_tokens": 40}),
    ("responses-json-schema", "/v1/responses",
     {"input": "Give a city.", "max_output_tokens": 30,
      "text": {"format": {"type": "json_schema", "name": "city", "schema": {
          "type": "object", "properties": {"name": {"type": "string", "maxLength": 12}},
          "required": ["name"]}}}}),
    ("responses-stream", "/v1/responses",
     {"input": "Say hello.", "max_output_tokens": 6, "stream": True}),
    ("responses-stream-tools", "/v1/responses",
     {"input": "Weather in Paris?", "tools": TOOLS_RESPONSES, "tool_choice": "required",
      "max_output_tokens": 40, "stream": True}),
]

# What each route's body and stream events are.
BODY_TYPE = {"/v1/chat/completions": ChatCompletion, "/v1/completions": Completion,
             "/v1/responses": Response}
EVENT_TYPE = {"/v1/chat/completions": ChatCompletionChunk, "/v1/completions": Completion,
              "/v1/responses": ResponseStreamEvent}


@pytest.mark.parametrize("name,path,body", CASES, ids=[c[0] for c in CASES])
def test_conforms(daemon, name, path, body):
    stream = body.get("stream", False)
    r = requests.post(daemon.url(path), json=body, timeout=300, stream=stream)
    if r.status_code != 200:
        pytest.fail(f"{name}: HTTP {r.status_code}: {r.text[:1000]}")
    if not stream:
        check(r.json(), BODY_TYPE[path], name)
        return
    assert r.headers["Content-Type"] == "text/event-stream; charset=utf-8"
    events = list(sse_payloads(r))
    assert events, f"{name}: empty stream"
    if path != "/v1/responses":
        assert events[-1] == "[DONE]", f"{name}: no [DONE]"
        events = events[:-1]
    for i, e in enumerate(events):
        event = json.loads(e)
        if path == "/v1/completions":
            # OpenAI's own stream sends finish_reason null until the last chunk; the SDK reads
            # the chunks with the non-stream Completion type, whose Literal has no None.
            for c in event["choices"]:
                assert "finish_reason" in c, e
                if c["finish_reason"] is None:
                    c["finish_reason"] = "stop"
        check(event, EVENT_TYPE[path], f"{name} event {i}")
    if path == "/v1/responses":
        final = json.loads(events[-1])
        assert final["type"] in ("response.completed", "response.incomplete"), final["type"]
        check(final["response"], Response, f"{name} final response")


def test_models_list_and_retrieve(daemon):
    r = requests.get(daemon.url("/v1/models"), timeout=30)
    assert r.status_code == 200
    listing = r.json()
    assert listing["object"] == "list" and listing["data"]
    for i, m in enumerate(listing["data"]):
        check(m, Model, f"models.data[{i}]")
        got = requests.get(daemon.url("/v1/models/" + m["id"]), timeout=30)
        assert got.status_code == 200, got.text
        check(got.json(), Model, f"models/{m['id']}")
        assert got.json()["id"] == m["id"]


# Refused requests: each must be a 4xx in OpenAI's error shape, naming `param` where given.
ERRORS = [
    ("chat-fractional-max-tokens", "post", "/v1/chat/completions",
     {"messages": HELLO, "max_tokens": 8.5}, 400, "max_tokens"),
    ("chat-fractional-n", "post", "/v1/chat/completions",
     {"messages": HELLO, "n": 1.5}, 400, "n"),
    ("chat-fractional-seed", "post", "/v1/chat/completions",
     {"messages": HELLO, "seed": 0.25}, 400, "seed"),
    ("chat-fractional-top-logprobs", "post", "/v1/chat/completions",
     {"messages": HELLO, "logprobs": True, "top_logprobs": 1.5}, 400, "top_logprobs"),
    ("completion-fractional-logprobs", "post", "/v1/completions",
     {"prompt": "x", "logprobs": 0.5}, 400, "logprobs"),
    ("responses-fractional-max-output-tokens", "post", "/v1/responses",
     {"input": "x", "max_output_tokens": 8.5}, 400, "max_output_tokens"),
    ("chat-bad-role", "post", "/v1/chat/completions",
     {"messages": [{"role": "robot", "content": "x"}]}, 400, "messages[0].role"),
    ("chat-unknown-model", "post", "/v1/chat/completions",
     {"model": "no-such-model", "messages": HELLO}, 404, "model"),
    ("models-retrieve-unknown", "get", "/v1/models/no-such-model", None, 404, "model"),
    ("no-route", "get", "/v1/nothing-here", None, 404, None),
    ("bad-json", "post", "/v1/chat/completions", "{", 400, None),
]


@pytest.mark.parametrize("name,method,path,body,status,param", ERRORS,
                         ids=[e[0] for e in ERRORS])
def test_errors_conform(daemon, name, method, path, body, status, param):
    if method == "get":
        r = requests.get(daemon.url(path), timeout=30)
    elif isinstance(body, str):
        r = requests.post(daemon.url(path), data=body, timeout=30,
                          headers={"Content-Type": "application/json"})
    else:
        r = requests.post(daemon.url(path), json=body, timeout=30)
    assert r.status_code == status, f"{name}: HTTP {r.status_code}: {r.text}"
    check_error(r, name)
    if param is not None:
        assert r.json()["error"]["param"] == param, r.text


def test_sdk_strict_roundtrip(client, model_id):
    """The SDK itself, on the same routes: its parsed objects carry the raw JSON checked above."""
    chat = client.chat.completions.create(model=model_id, messages=HELLO, max_tokens=4)
    check(chat.model_dump(mode="json", exclude_unset=True), ChatCompletion, "sdk chat")
    model = client.models.retrieve(model_id)
    assert model.id == model_id
    resp = client.responses.create(model=model_id, input="Say hello.", max_output_tokens=8)
    check(resp.model_dump(mode="json", exclude_unset=True), Response, "sdk responses")
