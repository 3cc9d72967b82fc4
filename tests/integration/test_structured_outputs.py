"""Structured outputs through real clients: response_format (JSON mode, JSON schema, a Pydantic
model via the SDK's parse), vLLM's structured_outputs (json / regex / choice / grammar) on both
endpoints, and gRPC. Every output is checked by an independent validator (jsonschema, re), greedy
and at temperature 1.0 with seeds."""
import json
import re
from concurrent.futures import ThreadPoolExecutor
from typing import List, Literal, Optional

import pytest
import requests

jsonschema = pytest.importorskip("jsonschema")
pydantic = pytest.importorskip("pydantic")

S = {"type": "string", "maxLength": 24}
I = {"type": "integer", "minimum": 0, "maximum": 1000}

# 32 schemas: nested objects, arrays with min/max items, enums, patterns, nullable types,
# numbers, booleans, const, anyOf, $ref, optional properties.
SCHEMAS = [
    {"type": "object", "properties": {"name": S, "age": I}, "required": ["name", "age"]},
    {"type": "object", "properties": {"city": S, "country": S, "population": I},
     "required": ["city", "country", "population"]},
    {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
    {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]}},
     "required": ["color"]},
    {"type": "object", "properties": {"tags": {"type": "array", "items": S, "minItems": 1,
                                               "maxItems": 3}}, "required": ["tags"]},
    {"type": "object", "properties": {"scores": {"type": "array", "items": I, "minItems": 2,
                                                 "maxItems": 4}}, "required": ["scores"]},
    {"type": "object", "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
     "required": ["zip"]},
    {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3}$"}},
     "required": ["code"]},
    {"type": "object", "properties": {"nickname": {"type": ["string", "null"], "maxLength": 12}},
     "required": ["nickname"]},
    {"type": "object", "properties": {"price": {"type": "number", "minimum": 0, "maximum": 100}},
     "required": ["price"]},
    {"type": "object", "properties": {"version": {"const": "v1"}, "n": I},
     "required": ["version", "n"]},
    {"type": "object", "properties": {"person": {"type": "object", "properties": {
        "first": S, "last": S}, "required": ["first", "last"]}}, "required": ["person"]},
    {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {
        "type": "object", "properties": {"c": I}, "required": ["c"]}}, "required": ["b"]}},
     "required": ["a"]},
    {"type": "object", "properties": {"items": {"type": "array", "maxItems": 3, "items": {
        "type": "object", "properties": {"sku": S, "qty": I}, "required": ["sku", "qty"]}}},
     "required": ["items"]},
    {"type": "object", "properties": {"value": {"anyOf": [I, {"type": "boolean"}]}},
     "required": ["value"]},
    {"type": "object", "properties": {"status": {"enum": ["open", "closed", None]}},
     "required": ["status"]},
    {"type": "object", "properties": {"point": {"$ref": "#/$defs/point"}},
     "required": ["point"], "$defs": {"point": {"type": "object", "properties": {"x": I, "y": I},
                                                "required": ["x", "y"]}}},
    {"type": "object", "properties": {"title": S, "subtitle": S}, "required": ["title"]},
    {"type": "object", "properties": {"flags": {"type": "array", "items": {"type": "boolean"},
                                                "minItems": 1, "maxItems": 5}},
     "required": ["flags"]},
    {"type": "object", "properties": {"level": {"type": "integer", "enum": [1, 2, 3]}},
     "required": ["level"]},
    {"type": "object", "properties": {"email": {"type": "string",
                                                "pattern": "^[a-z]{1,8}@[a-z]{1,8}\\.com$"}},
     "required": ["email"]},
    {"type": "object", "properties": {"matrix": {"type": "array", "maxItems": 2, "items": {
        "type": "array", "items": I, "minItems": 1, "maxItems": 2}}}, "required": ["matrix"]},
    {"type": "object", "properties": {"user": {"type": "object", "properties": {
        "id": I, "roles": {"type": "array", "items": {"enum": ["admin", "dev", "ops"]},
                           "maxItems": 2}}, "required": ["id", "roles"]}}, "required": ["user"]},
    {"type": "object", "properties": {"temp": {"type": "number"}, "unit": {"enum": ["C", "F"]}},
     "required": ["temp", "unit"], "additionalProperties": False},
    {"type": "object", "properties": {"note": {"type": ["string", "null"], "maxLength": 20},
                                      "count": {"type": ["integer", "null"], "minimum": 0,
                                                "maximum": 9}},
     "required": ["note", "count"]},
    {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}, "confidence": {
        "type": "number", "minimum": 0, "maximum": 1}}, "required": ["answer", "confidence"]},
    {"type": "object", "properties": {"words": {"type": "array", "items": {
        "type": "string", "pattern": "^[a-z]{1,6}$"}, "minItems": 2, "maxItems": 4}},
     "required": ["words"]},
    {"type": "object", "properties": {"date": {"type": "string",
                                               "pattern": "^20[0-9]{2}-[01][0-9]-[0-3][0-9]$"}},
     "required": ["date"]},
    {"type": "object", "properties": {"kind": {"const": "circle"}, "radius": I},
     "required": ["kind", "radius"]},
    {"type": "object", "properties": {"pair": {"type": "array", "prefixItems": [S, I],
                                               "items": False}}, "required": ["pair"]},
    {"type": "object", "properties": {"meta": {"type": "object", "properties": {
        "created": I, "tags": {"type": "array", "items": S, "maxItems": 2}},
        "required": ["created"]}, "id": I}, "required": ["meta", "id"]},
    {"type": "array", "items": {"type": "object", "properties": {"k": S, "v": I},
                                "required": ["k", "v"]}, "minItems": 1, "maxItems": 3},
]

PROMPT = "Answer with a JSON value that fits the request. Describe a small made-up example."


def chat(client, model, schema, temperature, seed):
    r = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": PROMPT}], max_tokens=300,
        temperature=temperature, seed=seed,
        response_format={"type": "json_schema",
                         "json_schema": {"name": "answer", "schema": schema, "strict": True}})
    return r.choices[0]


@pytest.mark.parametrize("temperature,seed", [(0.0, None), (1.0, 1), (1.0, 2)])
def test_every_schema_output_parses_and_validates(client, model_id, temperature, seed):
    assert len(SCHEMAS) >= 30
    with ThreadPoolExecutor(8) as pool:
        choices = list(pool.map(lambda s: chat(client, model_id, s, temperature, seed), SCHEMAS))
    for schema, choice in zip(SCHEMAS, choices):
        assert choice.finish_reason == "stop", (schema, choice.message.content)
        value = json.loads(choice.message.content)
        jsonschema.validate(value, schema)


def test_schema_properties_keep_the_callers_order(client, model_id):
    schema = {"type": "object", "properties": {"zebra": I, "apple": I, "mango": I},
              "required": ["zebra", "apple", "mango"]}
    c = chat(client, model_id, schema, 0.0, None)
    assert list(json.loads(c.message.content)) == ["zebra", "apple", "mango"]


def test_json_object_mode_gives_an_object(client, model_id):
    # JSON mode bounds nothing, so a sampled object may outgrow max_tokens; every one that ends
    # is a JSON object, and greedy ends.
    ended = 0
    for temperature, seed in [(0.0, None), (1.0, 1), (1.0, 2), (1.0, 3)]:
        r = client.chat.completions.create(
            model=model_id, max_tokens=400, temperature=temperature, seed=seed,
            messages=[{"role": "user", "content":
                       "Reply with a JSON object holding a cat's name and age, nothing else."}],
            response_format={"type": "json_object"})
        if r.choices[0].finish_reason == "stop":
            ended += 1
            assert isinstance(json.loads(r.choices[0].message.content), dict)
        else:
            assert r.choices[0].message.content.startswith("{")
    assert ended >= 1


class Ingredient(pydantic.BaseModel):
    name: str = pydantic.Field(max_length=20)
    grams: int = pydantic.Field(ge=0, le=1000)


class Recipe(pydantic.BaseModel):
    title: str = pydantic.Field(max_length=30)
    vegetarian: bool
    course: Literal["starter", "main", "dessert"]
    ingredients: List[Ingredient] = pydantic.Field(min_length=1, max_length=3)
    note: Optional[str] = pydantic.Field(default=None, max_length=20)


def test_sdk_parse_with_a_pydantic_model(client, model_id):
    for temperature, seed in [(0.0, None), (1.0, 7), (1.0, 8)]:
        r = client.beta.chat.completions.parse(
            model=model_id, max_tokens=300, temperature=temperature, seed=seed,
            messages=[{"role": "user", "content": "Write a simple recipe."}],
            response_format=Recipe)
        parsed = r.choices[0].message.parsed
        assert isinstance(parsed, Recipe)
        assert 1 <= len(parsed.ingredients) <= 3


def test_structured_outputs_on_both_endpoints(daemon, model_id):
    cases = [
        ({"regex": "[a-c]{2,4}-[0-9]{2}"}, lambda t: re.fullmatch("[a-c]{2,4}-[0-9]{2}", t)),
        ({"choice": ["alpha", "beta", "gamma delta"]},
         lambda t: t in ("alpha", "beta", "gamma delta")),
        ({"grammar": 'root ::= "(" [0-9]+ ("+" [0-9]+)* ")"'},
         lambda t: re.fullmatch(r"\([0-9]+(\+[0-9]+)*\)", t)),
        ({"json": {"type": "object", "properties": {"n": I}, "required": ["n"]}},
         lambda t: jsonschema.validate(json.loads(t), {"type": "object", "properties": {"n": I},
                                                       "required": ["n"]}) is None),
    ]
    for so, check in cases:
        for temperature, seed in [(0.0, None), (1.0, 3)]:
            body = {"model": model_id, "max_tokens": 40, "temperature": temperature,
                    "structured_outputs": so}
            if seed is not None:
                body["seed"] = seed
            c = requests.post(daemon.url("/v1/completions"),
                              json={**body, "prompt": "Output:"}, timeout=120).json()
            text = c["choices"][0]["text"]
            assert c["choices"][0]["finish_reason"] == "stop" and check(text), (so, text)
            m = requests.post(daemon.url("/v1/chat/completions"), timeout=120, json={
                **body, "messages": [{"role": "user", "content": "Answer."}]}).json()
            text = m["choices"][0]["message"]["content"]
            assert m["choices"][0]["finish_reason"] == "stop" and check(text), (so, text)


def test_streaming_follows_the_schema(client, model_id):
    schema = SCHEMAS[1]
    stream = client.chat.completions.create(
        model=model_id, max_tokens=200, temperature=1.0, seed=11, stream=True,
        messages=[{"role": "user", "content": PROMPT}],
        response_format={"type": "json_schema", "json_schema": {"name": "c", "schema": schema}})
    text, finish = "", None
    for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
    assert finish == "stop"
    jsonschema.validate(json.loads(text), schema)


def test_a_cold_compile_is_cached(daemon, model_id):
    schema = {"type": "object", "properties": {"unique_key_7781": I}, "required": ["unique_key_7781"]}
    body = {"model": model_id, "prompt": "x", "max_tokens": 60, "temperature": 0,
            "response_format": {"type": "json_schema", "json_schema": {"name": "u", "schema": schema}}}
    before = daemon.metric("llmserve_grammar_compiles_total")
    hits = daemon.metric("llmserve_grammar_cache_hits_total")
    for _ in range(3):
        r = requests.post(daemon.url("/v1/completions"), json=body, timeout=120)
        assert r.status_code == 200, r.text
        jsonschema.validate(json.loads(r.json()["choices"][0]["text"]), schema)
    assert daemon.metric("llmserve_grammar_compiles_total") == before + 1
    assert daemon.metric("llmserve_grammar_cache_hits_total") == hits + 2


@pytest.mark.parametrize("body,param", [
    ({"response_format": {"type": "json_schema",
                          "json_schema": {"name": "x", "schema": {"type": "no-such-type"}}}},
     "response_format.json_schema.schema"),
    ({"response_format": {"type": "yaml"}}, "response_format"),
    ({"structured_outputs": {"regex": "(unclosed"}}, "structured_outputs.regex"),
    ({"structured_outputs": {"grammar": "root ::= missing_rule"}}, "structured_outputs.grammar"),
    ({"structured_outputs": {"regex": "a", "choice": ["b"]}}, "structured_outputs"),
])
def test_bad_grammars_are_400_naming_the_field(daemon, model_id, body, param):
    for path, extra in [("/v1/completions", {"prompt": "x"}),
                        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}]})]:
        r = requests.post(daemon.url(path), json={"model": model_id, **extra, **body}, timeout=60)
        assert r.status_code == 400, r.text
        err = r.json()["error"]
        assert err["type"] == "invalid_request_error"
        assert err["param"] == param, err
        assert "/" not in err["message"].split(":", 1)[1], err  # no source paths of xgrammar
    # The daemon still serves.
    assert requests.get(daemon.url("/health"), timeout=10).status_code == 200
