"""Tools beside a JSON response_format in one request, as the OpenAI Agents SDK, pydantic-ai's
native output and LiteLLM send them: under tool_choice "auto" the reply is a valid call or text
that follows the schema; a forced call ignores the format; tool parameters and answer schemas
with "$defs" (Pydantic's nested models, as instructor sends them) compile. Outputs are checked
with jsonschema. /v1/responses takes tools with text.format the same way."""
import json

import pytest
import requests

jsonschema = pytest.importorskip("jsonschema")

CITY_TOOL = {"type": "function", "function": {
    "name": "lookup_city", "description": "Facts about a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}},
                   "required": ["city"], "additionalProperties": False}}}
ANSWER = {"type": "object", "properties": {
    "city": {"type": "string", "maxLength": 20},
    "population_millions": {"type": "integer", "minimum": 0, "maximum": 100}},
    "required": ["city", "population_millions"], "additionalProperties": False}
FORMAT = {"type": "json_schema", "json_schema": {"name": "Answer", "schema": ANSWER,
                                                 "strict": True}}
# A Pydantic model with a nested one: the nested one is a "$defs" entry referenced by "$ref".
NESTED = {"$defs": {"Place": {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 20}, "country": {"type": "string", "maxLength": 20}},
    "required": ["name", "country"], "additionalProperties": False}},
    "type": "object", "properties": {"places": {"type": "array", "maxItems": 2,
                                                 "items": {"$ref": "#/$defs/Place"}}},
    "required": ["places"], "additionalProperties": False}
ASK = [{"role": "user", "content": "How many people live in Paris?"}]


def test_auto_with_json_schema_gives_a_call_or_a_conforming_answer(client, model_id):
    seen = set()
    for seed in (1, 2, 3):
        r = client.chat.completions.create(model=model_id, messages=ASK, tools=[CITY_TOOL],
                                           response_format=FORMAT, max_tokens=60,
                                           temperature=1.0, seed=seed)
        m = r.choices[0].message
        if m.tool_calls:
            assert r.choices[0].finish_reason == "tool_calls"
            for c in m.tool_calls:
                assert c.function.name == "lookup_city"
                jsonschema.validate(json.loads(c.function.arguments),
                                    CITY_TOOL["function"]["parameters"])
            seen.add("call")
        else:
            assert r.choices[0].finish_reason == "stop"
            jsonschema.validate(json.loads(m.content), ANSWER)
            seen.add("answer")
    assert seen


def test_after_a_tool_result_the_answer_follows_the_schema(client, model_id):
    call = {"id": "call_1", "type": "function",
            "function": {"name": "lookup_city", "arguments": '{"city": "Paris"}'}}
    messages = ASK + [{"role": "assistant", "content": None, "tool_calls": [call]},
                      {"role": "tool", "tool_call_id": "call_1",
                       "content": "2 million. Now give the final answer."}]
    for seed in (1, 2):
        r = client.chat.completions.create(model=model_id, messages=messages, tools=[CITY_TOOL],
                                           response_format=FORMAT, max_tokens=60,
                                           temperature=1.0, seed=seed)
        m = r.choices[0].message
        if not m.tool_calls:
            jsonschema.validate(json.loads(m.content), ANSWER)


def test_json_object_format_beside_tools(client, model_id):
    r = client.chat.completions.create(model=model_id, messages=ASK, tools=[CITY_TOOL],
                                       response_format={"type": "json_object"}, max_tokens=60,
                                       temperature=0)
    m = r.choices[0].message
    assert m.tool_calls or isinstance(json.loads(m.content), dict)


def test_forced_call_ignores_the_format(client, model_id):
    for choice in ("required", {"type": "function", "function": {"name": "lookup_city"}}):
        r = client.chat.completions.create(model=model_id, messages=ASK, tools=[CITY_TOOL],
                                           tool_choice=choice, response_format=FORMAT,
                                           max_tokens=60, temperature=0)
        assert r.choices[0].finish_reason == "tool_calls"
        assert r.choices[0].message.tool_calls[0].function.name == "lookup_city"


def test_tool_parameters_with_definitions(client, model_id):
    tool = {"type": "function", "function": {"name": "list_places", "parameters": NESTED}}
    r = client.chat.completions.create(
        model=model_id, messages=[{"role": "user", "content": "Name two French cities."}],
        tools=[tool], tool_choice={"type": "function", "function": {"name": "list_places"}},
        max_tokens=100, temperature=0)
    assert r.choices[0].finish_reason == "tool_calls"
    jsonschema.validate(json.loads(r.choices[0].message.tool_calls[0].function.arguments),
                        NESTED)


def test_answer_schema_with_definitions(client, model_id):
    r = client.chat.completions.create(
        model=model_id, messages=[{"role": "user", "content": "Name two French cities."}],
        tools=[CITY_TOOL], max_tokens=100, temperature=0,
        response_format={"type": "json_schema", "json_schema": {"name": "Places",
                                                                "schema": NESTED,
                                                                "strict": True}})
    m = r.choices[0].message
    if not m.tool_calls:
        jsonschema.validate(json.loads(m.content), NESTED)


def test_streamed_answer_equals_the_whole_one(daemon, model_id):
    body = {"model": model_id, "messages": ASK, "tools": [CITY_TOOL], "response_format": FORMAT,
            "max_tokens": 60, "temperature": 1.0, "seed": 3}
    whole = requests.post(daemon.url("/v1/chat/completions"), json=body, timeout=120).json()
    r = requests.post(daemon.url("/v1/chat/completions"), json={**body, "stream": True},
                      stream=True, timeout=120)
    content, calls = "", []
    for line in r.iter_lines():
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        for ch in json.loads(line[6:])["choices"]:
            content += ch["delta"].get("content") or ""
            calls += ch["delta"].get("tool_calls") or []
    m = whole["choices"][0]["message"]
    if m.get("tool_calls"):
        assert [c["function"]["name"] for c in calls] == \
            [c["function"]["name"] for c in m["tool_calls"]]
    else:
        assert content == m["content"]


def test_non_json_formats_beside_auto_tools_are_a_400(daemon, model_id):
    r = requests.post(daemon.url("/v1/chat/completions"), timeout=60, json={
        "model": model_id, "messages": ASK, "tools": [CITY_TOOL], "max_tokens": 8,
        "structured_outputs": {"regex": "[a-z]+"}})
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["param"] == "tools" and "regex" in err["message"]


def test_responses_tools_with_text_format(client, model_id):
    r = client.responses.create(
        model=model_id, input="How many people live in Paris?", max_output_tokens=60,
        temperature=0, tools=[{"type": "function", "name": "lookup_city",
                               "parameters": CITY_TOOL["function"]["parameters"],
                               "strict": True}],
        text={"format": {"type": "json_schema", "name": "Answer", "schema": ANSWER,
                         "strict": True}})
    assert r.status == "completed"
    calls = [o for o in r.output if o.type == "function_call"]
    if calls:
        jsonschema.validate(json.loads(calls[0].arguments), CITY_TOOL["function"]["parameters"])
    else:
        jsonschema.validate(json.loads(r.output_text), ANSWER)
