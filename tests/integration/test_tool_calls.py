"""Tool calling through the openai SDK: tool_choice required / named / auto, streaming and not,
parallel_tool_calls, a multi-turn conversation with a tool result, and bad input. Arguments are
validated against each tool's parameter schema with jsonschema."""
import json

import pytest
import requests

jsonschema = pytest.importorskip("jsonschema")

WEATHER = {"type": "object", "properties": {
    "city": {"type": "string", "maxLength": 24},
    "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city", "unit"]}
TIME = {"type": "object", "properties": {"timezone": {"type": "string", "maxLength": 24}},
        "required": ["timezone"]}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description":
                                      "The current weather in a city.", "parameters": WEATHER}},
    {"type": "function", "function": {"name": "get_time", "description":
                                      "The current time in a timezone.", "parameters": TIME}},
]
SCHEMAS = {"get_weather": WEATHER, "get_time": TIME}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


def check_calls(calls, allowed=("get_weather", "get_time")):
    assert calls, "no tool call"
    ids = set()
    for c in calls:
        assert c.type == "function"
        assert c.id.startswith("call_") and c.id not in ids
        ids.add(c.id)
        assert c.function.name in allowed
        jsonschema.validate(json.loads(c.function.arguments), SCHEMAS[c.function.name])


@pytest.mark.parametrize("temperature,seed", [(0.0, None), (1.0, 1), (1.0, 2), (1.0, 3)])
def test_required_always_gives_valid_calls(client, model_id, temperature, seed):
    r = client.chat.completions.create(model=model_id, messages=ASK, tools=TOOLS,
                                       tool_choice="required", temperature=temperature,
                                       seed=seed, max_tokens=300)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    check_calls(choice.message.tool_calls)


def test_named_function_is_the_one_called(client, model_id):
    for seed in (1, 2, 3):
        r = client.chat.completions.create(
            model=model_id, messages=ASK, tools=TOOLS, temperature=1.0, seed=seed, max_tokens=300,
            tool_choice={"type": "function", "function": {"name": "get_time"}})
        check_calls(r.choices[0].message.tool_calls, allowed=("get_time",))
        assert r.choices[0].finish_reason == "tool_calls"


def test_parallel_tool_calls_false_gives_one_call(client, model_id):
    for seed in (4, 5, 6):
        r = client.chat.completions.create(model=model_id, messages=ASK, tools=TOOLS,
                                           tool_choice="required", parallel_tool_calls=False,
                                           temperature=1.0, seed=seed, max_tokens=300)
        assert len(r.choices[0].message.tool_calls) == 1


def test_auto_gives_a_call_or_a_text_answer(client, model_id):
    outcomes = set()
    for seed in range(1, 7):
        r = client.chat.completions.create(model=model_id, messages=ASK, tools=TOOLS,
                                           tool_choice="auto", temperature=1.0, seed=seed,
                                           max_tokens=300)
        choice = r.choices[0]
        if choice.message.tool_calls:
            assert choice.finish_reason == "tool_calls"
            check_calls(choice.message.tool_calls)
            outcomes.add("call")
        else:
            assert choice.finish_reason == "stop"
            assert isinstance(choice.message.content, str)
            outcomes.add("text")
    assert outcomes  # each reply was one of the two well-formed shapes


def test_none_leaves_the_reply_free(client, model_id):
    r = client.chat.completions.create(model=model_id, messages=ASK, tools=TOOLS,
                                       tool_choice="none", temperature=0, max_tokens=20)
    assert r.choices[0].message.tool_calls is None
    assert r.choices[0].message.content


def test_streaming_sends_tool_call_deltas(client, model_id):
    stream = client.chat.completions.create(model=model_id, messages=ASK, tools=TOOLS,
                                            tool_choice="required", temperature=1.0, seed=9,
                                            max_tokens=300, stream=True)
    calls, finish, first_pieces = {}, None, []
    for chunk in stream:
        if not chunk.choices:
            continue
        d = chunk.choices[0].delta
        finish = chunk.choices[0].finish_reason or finish
        for tc in d.tool_calls or []:
            entry = calls.setdefault(tc.index, {"id": None, "name": None, "arguments": ""})
            if tc.id:
                entry["id"] = tc.id
                first_pieces.append(tc.index)
            if tc.function and tc.function.name:
                entry["name"] = tc.function.name
            if tc.function and tc.function.arguments:
                entry["arguments"] += tc.function.arguments
    assert finish == "tool_calls"
    assert calls and sorted(calls) == list(range(len(calls)))
    for entry in calls.values():
        assert entry["id"].startswith("call_")
        jsonschema.validate(json.loads(entry["arguments"]), SCHEMAS[entry["name"]])


def test_multi_turn_with_a_tool_result(client, model_id):
    first = client.chat.completions.create(model=model_id, messages=ASK, tools=TOOLS,
                                           tool_choice="required", temperature=0, max_tokens=300)
    call = first.choices[0].message.tool_calls[0]
    messages = ASK + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call.id, "type": "function",
             "function": {"name": call.function.name, "arguments": call.function.arguments}}]},
        {"role": "tool", "tool_call_id": call.id, "content": '{"temperature": 21, "sky": "clear"}'},
    ]
    second = client.chat.completions.create(model=model_id, messages=messages, tools=TOOLS,
                                            temperature=0, max_tokens=100)
    choice = second.choices[0]
    if choice.message.tool_calls:
        check_calls(choice.message.tool_calls)
    else:
        assert choice.finish_reason == "stop" and choice.message.content
    # Without tools the same history renders too (the calls go back into the template).
    third = client.chat.completions.create(model=model_id, messages=messages, temperature=0,
                                           max_tokens=30)
    assert third.choices[0].message.content


@pytest.mark.parametrize("extra,param", [
    ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}},
     "tool_choice"),
    ({"tools": TOOLS, "tool_choice": "sometimes"}, "tool_choice"),
    ({"tool_choice": "required"}, "tool_choice"),
    ({"tools": [{"type": "retrieval"}]}, "tools[0].type"),
    ({"tools": [{"type": "function", "function": {"name": "bad name!"}}]},
     "tools[0].function.name"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": "x"}}]},
     "tools[0].function.parameters"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "no-such-type"}}}], "tool_choice": "required"}, "tools"),
    ({"tools": TOOLS, "parallel_tool_calls": "yes"}, "parallel_tool_calls"),
])
def test_bad_tool_requests_are_400_naming_the_field(daemon, model_id, extra, param):
    r = requests.post(daemon.url("/v1/chat/completions"), timeout=60,
                      json={"model": model_id, "messages": ASK, **extra})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == param, r.json()


def test_n_samples_each_give_valid_calls(client, model_id):
    r = client.chat.completions.create(model=model_id, messages=ASK, tools=TOOLS, n=3,
                                       tool_choice="required", temperature=0.7, seed=21,
                                       max_tokens=300)
    assert len(r.choices) == 3
    ids = set()
    for choice in r.choices:
        assert choice.finish_reason == "tool_calls"
        check_calls(choice.message.tool_calls)
        ids.update(c.id for c in choice.message.tool_calls)
    assert len(ids) == sum(len(c.message.tool_calls) for c in r.choices)  # ids never repeat
