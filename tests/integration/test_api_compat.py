"""Issue 51's API findings 15 and 17-21, one focused test each, on the real default model.

test_openai_conformance.py checks every body against the openai SDK's models; these tests pin
each finding's own trigger and behaviour.
"""
import json
import re

import pytest
import requests

HELLO = [{"role": "user", "content": "Say hello."}]


def post(daemon, path, body, **kw):
    return requests.post(daemon.url(path), json=body, timeout=300, **kw)


# --- 15: SSE charset; /v1/responses and structured_outputs ---

def test_sse_content_type_names_utf8_and_requests_decodes_non_ascii(daemon):
    # The prompt makes the model write non-ASCII; the check is on how requests decodes bytes.
    r = post(daemon, "/v1/completions",
             {"prompt": "Café, naïve, 東京 and ", "max_tokens": 12, "stream": True, "echo": True},
             stream=True)
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "text/event-stream; charset=utf-8"
    # requests asks for gzip; a compressed stream would arrive only when it ended.
    assert "Content-Encoding" not in r.headers
    assert r.encoding.lower() == "utf-8"
    texts = []
    for line in r.iter_lines(decode_unicode=True):
        if line.startswith("data: ") and line != "data: [DONE]":
            texts.append(json.loads(line[6:])["choices"][0]["text"])
    # Decoded as Latin-1, "é" would read "Ã©".
    assert "Café, naïve, 東京" in "".join(texts)
    assert "Ã" not in "".join(texts)


def test_responses_honours_structured_outputs_as_chat_does(daemon):
    body = {"structured_outputs": {"choice": ["alpha", "omega"]}, "max_output_tokens": 5,
            "temperature": 0}
    r = post(daemon, "/v1/responses", {"input": "Pick one.", **body})
    assert r.status_code == 200, r.text
    text = r.json()["output"][0]["content"][0]["text"]
    assert text in ("alpha", "omega")
    chat = post(daemon, "/v1/chat/completions",
                {"messages": [{"role": "user", "content": "Pick one."}],
                 "structured_outputs": body["structured_outputs"], "max_tokens": 5,
                 "temperature": 0})
    assert chat.json()["choices"][0]["message"]["content"] == text
    # Refused as chat refuses it, named in Responses terms.
    bad = post(daemon, "/v1/responses", {"input": "x", "structured_outputs": {}})
    assert bad.status_code == 400
    assert bad.json()["error"]["param"] == "structured_outputs"
    both = post(daemon, "/v1/responses", {"input": "x", "structured_outputs": {"regex": "a"},
                                          "text": {"format": {"type": "json_object"}}})
    assert both.status_code == 400
    assert "text.format" in both.json()["error"]["message"]


# --- 17: integer fields take integral floats ---

@pytest.mark.parametrize("path,body,field", [
    ("/v1/chat/completions", {"messages": HELLO, "max_tokens": 8.0}, "max_tokens"),
    ("/v1/chat/completions", {"messages": HELLO, "max_tokens": 4, "seed": 7.0}, "seed"),
    ("/v1/chat/completions", {"messages": HELLO, "max_tokens": 4, "n": 1.0}, "n"),
    ("/v1/chat/completions",
     {"messages": HELLO, "max_tokens": 4, "logprobs": True, "top_logprobs": 2.0},
     "top_logprobs"),
    ("/v1/completions", {"prompt": "Hi", "max_tokens": 4, "logprobs": 1.0}, "logprobs"),
    ("/v1/completions", {"prompt": [1.0, 2.0, 3.0], "max_tokens": 2}, "prompt"),
    ("/v1/responses", {"input": "Hi", "max_output_tokens": 8.0}, "max_output_tokens"),
])
def test_integral_floats_are_integers_and_fractions_are_refused(daemon, path, body, field):
    r = post(daemon, path, body)
    assert r.status_code == 200, r.text
    bad = dict(body)
    bad[field] = [1.5, 2] if field == "prompt" else 8.5
    r = post(daemon, path, bad)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == field


def test_integral_float_max_tokens_is_the_same_request(daemon):
    a = post(daemon, "/v1/completions", {"prompt": "One, two,", "max_tokens": 5, "temperature": 0})
    b = post(daemon, "/v1/completions",
             {"prompt": "One, two,", "max_tokens": 5.0, "temperature": 0, "seed": 9.0})
    assert a.json()["choices"][0]["text"] == b.json()["choices"][0]["text"]
    assert b.json()["usage"]["completion_tokens"] <= 5


# --- 18: GET /v1/models/{model} ---

def test_models_retrieve(daemon, client, model_id):
    r = requests.get(daemon.url("/v1/models/" + model_id), timeout=30)
    assert r.status_code == 200, r.text
    listed = requests.get(daemon.url("/v1/models"), timeout=30).json()["data"][0]
    assert r.json() == listed
    assert client.models.retrieve(model_id).id == model_id
    missing = requests.get(daemon.url("/v1/models/gpt-nothing"), timeout=30)
    assert missing.status_code == 404
    err = missing.json()["error"]
    assert err["param"] == "model" and err["code"] == "model_not_found"
    assert err["type"] == "invalid_request_error" and "gpt-nothing" in err["message"]
    openai = pytest.importorskip("openai")
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-nothing")


# --- 19: continue_final_message; llama.cpp's json_schema and grammar ---

PARTIAL = [{"role": "user", "content": "What is the capital of France?"},
           {"role": "assistant", "content": "The capital of France is"}]


def render_text(daemon, body):
    r = post(daemon, "/v1/chat/completions/render", body)
    assert r.status_code == 200, r.text
    ids = r.json()["token_ids"]
    return ids, post(daemon, "/detokenize", {"tokens": ids}).json()["prompt"]


def test_continue_final_message_continues_the_assistant_text(daemon):
    ids, text = render_text(daemon, {"messages": PARTIAL, "continue_final_message": True})
    assert text.endswith("The capital of France is"), text
    # The same as the template's rendering without a generation prompt, cut after the content.
    full = requests.post(daemon.url("/tokenize"),
                         json={"messages": PARTIAL, "add_generation_prompt": False},
                         timeout=30).json()["tokens"]
    full_text = post(daemon, "/detokenize", {"tokens": full}).json()["prompt"]
    assert full_text.startswith(text) and len(full_text) > len(text)
    cut = full_text[:full_text.rindex("The capital of France is") + len("The capital of France is")]
    assert text == cut
    # /tokenize reads the flag the same way.
    tok = requests.post(daemon.url("/tokenize"),
                        json={"messages": PARTIAL, "continue_final_message": True},
                        timeout=30).json()["tokens"]
    assert tok == ids
    # Generation continues the message: the same tokens as a completion of the rendered prompt.
    chat = post(daemon, "/v1/chat/completions",
                {"messages": PARTIAL, "continue_final_message": True,
                 "add_generation_prompt": False, "max_tokens": 6, "temperature": 0})
    assert chat.status_code == 200, chat.text
    comp = post(daemon, "/v1/completions",
                {"prompt": ids, "max_tokens": 6, "temperature": 0})
    assert chat.json()["choices"][0]["message"]["content"] == comp.json()["choices"][0]["text"]
    assert chat.json()["usage"]["prompt_tokens"] == len(ids)


@pytest.mark.parametrize("body", [
    {"messages": PARTIAL, "continue_final_message": True, "add_generation_prompt": True},
    {"messages": PARTIAL[:1], "continue_final_message": True},
])
def test_continue_final_message_refusals(daemon, body):
    r = post(daemon, "/v1/chat/completions", body)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == "continue_final_message"


def test_json_schema_field_constrains_output(daemon):
    jsonschema = pytest.importorskip("jsonschema")
    schema = {"type": "object",
              "properties": {"city": {"type": "string", "maxLength": 10},
                             "rank": {"type": "integer", "minimum": 1, "maximum": 9}},
              "required": ["city", "rank"], "additionalProperties": False}
    for path, body in (("/v1/chat/completions",
                        {"messages": [{"role": "user", "content": "A city and its rank."}]}),
                       ("/v1/completions", {"prompt": "A city and its rank:"})):
        r = post(daemon, path, {**body, "json_schema": schema, "max_tokens": 40,
                                "temperature": 0})
        assert r.status_code == 200, r.text
        choice = r.json()["choices"][0]
        text = choice["message"]["content"] if "message" in choice else choice["text"]
        assert choice["finish_reason"] == "stop", text
        jsonschema.validate(json.loads(text), schema)


def test_grammar_field_is_gbnf(daemon):
    gbnf = 'root ::= "id-" digit digit ("-" word)?\ndigit ::= [0-9]\nword ::= [a-z]+\n'
    for path, body in (("/v1/chat/completions",
                        {"messages": [{"role": "user", "content": "An id please."}]}),
                       ("/v1/completions", {"prompt": "An id:"})):
        r = post(daemon, path, {**body, "grammar": gbnf, "max_tokens": 12, "temperature": 0})
        assert r.status_code == 200, r.text
        choice = r.json()["choices"][0]
        text = choice["message"]["content"] if "message" in choice else choice["text"]
        if choice["finish_reason"] == "stop":
            assert re.fullmatch(r"id-[0-9]{2}(-[a-z]+)?", text), text
        else:
            assert re.fullmatch(r"id-[0-9]{2}(-[a-z]*)?", text), text
    bad = post(daemon, "/v1/completions", {"prompt": "x", "grammar": "root ::= ("})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "grammar", bad.text


# --- 20: /v1/responses context-length errors ---

def test_responses_context_errors_name_input_or_max_output_tokens(daemon):
    max_len = requests.get(daemon.url("/v1/models"), timeout=30).json()["data"][0]["max_model_len"]
    long_input = "hello " * (max_len + 100)
    r = post(daemon, "/v1/responses", {"input": long_input})
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == "input" and err["code"] == "context_length_exceeded"
    assert "messages" not in err["message"]
    r = post(daemon, "/v1/responses", {"input": "Hi", "max_output_tokens": max_len})
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == "max_output_tokens" and err["code"] == "context_length_exceeded"
    assert "messages" not in err["message"]


# --- 21: spec-required fields ---

def test_spec_required_fields(daemon):
    chat = post(daemon, "/v1/chat/completions",
                {"messages": HELLO, "max_tokens": 3, "logprobs": True}).json()
    choice = chat["choices"][0]
    assert "refusal" in choice["message"] and choice["message"]["refusal"] is None
    assert "refusal" in choice["logprobs"] and choice["logprobs"]["refusal"] is None
    resp = post(daemon, "/v1/responses",
                {"input": "Hi", "max_output_tokens": 3,
                 "tools": [{"type": "function", "name": "f",
                            "parameters": {"type": "object", "properties": {}}},
                           {"type": "function", "name": "g", "strict": False}]}).json()
    assert resp["usage"]["input_tokens_details"]["cache_write_tokens"] == 0
    assert [t["strict"] for t in resp["tools"]] == [True, False]
    assert resp["tools"][1]["parameters"] is None
