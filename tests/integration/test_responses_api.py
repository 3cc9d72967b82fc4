"""POST /v1/responses (OpenAI's Responses API, stateless) through the openai SDK's
`client.responses.create` and `client.responses.stream`. The oracle for the text is our own
/v1/chat/completions over the same conversation at temperature 0; the SDK parses and checks the
event types and the object shapes."""
import json

import pytest
import requests

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}
CHAT_WEATHER_TOOL = {
    "type": "function",
    "function": {k: v for k, v in WEATHER_TOOL.items() if k != "type"},
}
PERSON_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def responses(client):
    assert hasattr(client, "responses"), "the openai SDK in the test venv predates the Responses API"
    return client.responses


def chat_text(client, model_id, messages, max_tokens, **kw):
    r = client.chat.completions.create(model=model_id, messages=messages, max_tokens=max_tokens,
                                       temperature=0, **kw)
    return r


def test_string_input(responses, model_id):
    r = responses.create(model=model_id, input="Say hello.", max_output_tokens=24, temperature=0)
    assert r.object == "response"
    assert r.id.startswith("resp_")
    assert r.status in ("completed", "incomplete")
    assert r.model == model_id
    assert [item.type for item in r.output] == ["message"]
    message = r.output[0]
    assert message.role == "assistant" and message.status == "completed"
    assert message.content[0].type == "output_text"
    assert r.output_text == message.content[0].text and r.output_text
    assert r.usage.input_tokens > 0 and 0 < r.usage.output_tokens <= 24
    assert r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens


def test_greedy_text_equals_chat_completions(client, responses, model_id):
    r = responses.create(model=model_id, instructions="You answer in one short sentence.",
                         input=[{"role": "user", "content": "What is the capital of France?"},
                                {"role": "assistant", "content": "Paris."},
                                {"type": "message", "role": "user",
                                 "content": [{"type": "input_text", "text": "And of Italy?"}]}],
                         max_output_tokens=32, temperature=0)
    c = chat_text(client, model_id, [
        {"role": "system", "content": "You answer in one short sentence."},
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": "Paris."},
        {"role": "user", "content": "And of Italy?"}], 32)
    assert r.output_text == c.choices[0].message.content
    assert r.usage.input_tokens == c.usage.prompt_tokens
    assert r.usage.output_tokens == c.usage.completion_tokens
    assert r.instructions == "You answer in one short sentence."
    expected = "completed" if c.choices[0].finish_reason == "stop" else "incomplete"
    assert r.status == expected


def test_json_schema_text_format(responses, model_id):
    r = responses.create(
        model=model_id, input="Invent a person; give their name and age as JSON.",
        text={"format": {"type": "json_schema", "name": "person", "schema": PERSON_SCHEMA,
                         "strict": True}},
        max_output_tokens=64, temperature=0)
    assert r.status == "completed"
    value = json.loads(r.output_text)
    try:
        import jsonschema
    except ImportError:
        assert set(value) == {"name", "age"} and isinstance(value["age"], int)
    else:
        jsonschema.validate(value, PERSON_SCHEMA)
    assert r.text.format.type == "json_schema"


def test_forced_function_call_then_tool_result_turn(client, responses, model_id):
    question = {"role": "user", "content": "What is the weather in Paris?"}
    r = responses.create(model=model_id, input=[question], tools=[WEATHER_TOOL],
                         tool_choice={"type": "function", "name": "get_weather"},
                         max_output_tokens=64, temperature=0)
    calls = [item for item in r.output if item.type == "function_call"]
    assert len(calls) == 1, r.output
    call = calls[0]
    assert call.name == "get_weather" and call.call_id and call.id != call.call_id
    arguments = json.loads(call.arguments)
    assert isinstance(arguments["city"], str)
    assert r.status == "completed"
    # The same request on the chat route makes the same call.
    c = chat_text(client, model_id, [question], 64, tools=[CHAT_WEATHER_TOOL],
                  tool_choice={"type": "function", "function": {"name": "get_weather"}})
    assert c.choices[0].message.tool_calls[0].function.arguments == call.arguments

    # Next turn: the call and its output go back as input items.
    history = [question, {"type": "function_call", "call_id": call.call_id, "name": call.name,
                          "arguments": call.arguments},
               {"type": "function_call_output", "call_id": call.call_id,
                "output": "Sunny, 21 degrees Celsius."}]
    r2 = responses.create(model=model_id, input=history, tools=[WEATHER_TOOL],
                          tool_choice="none", max_output_tokens=40, temperature=0)
    assert [item.type for item in r2.output] == ["message"]
    c2 = chat_text(client, model_id, [
        question,
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call.call_id, "type": "function",
             "function": {"name": call.name, "arguments": call.arguments}}]},
        {"role": "tool", "tool_call_id": call.call_id, "content": "Sunny, 21 degrees Celsius."}],
        40, tools=[CHAT_WEATHER_TOOL], tool_choice="none")
    assert r2.output_text == c2.choices[0].message.content
    # The SDK's own item objects go back as they came, too.
    r3 = responses.create(model=model_id, input=[question, call, history[2]], tools=[WEATHER_TOOL],
                          tool_choice="none", max_output_tokens=40, temperature=0)
    assert r3.output_text == r2.output_text


def test_max_output_tokens_gives_incomplete(responses, model_id):
    r = responses.create(model=model_id, input="Write a long story about a dragon.",
                         max_output_tokens=3, temperature=0)
    assert r.status == "incomplete"
    assert r.incomplete_details.reason == "max_output_tokens"
    assert r.usage.output_tokens == 3
    assert r.max_output_tokens == 3
    assert r.output_text


def test_stream_events_and_text(responses, model_id):
    kw = dict(model=model_id, input="Say hello.", max_output_tokens=48, temperature=0)
    whole = responses.create(**kw)
    assert whole.status == "completed", "the prompt must finish within max_output_tokens"
    with responses.stream(**kw) as stream:
        events = list(stream)
        final = stream.get_final_response()
    types = [e.type for e in events]
    assert types[:4] == ["response.created", "response.in_progress",
                         "response.output_item.added", "response.content_part.added"]
    assert types[-4:] == ["response.output_text.done", "response.content_part.done",
                          "response.output_item.done", "response.completed"]
    assert set(types[4:-4]) == {"response.output_text.delta"}
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas == final.output_text == whole.output_text
    assert events[-4].text == deltas
    assert final.id == events[0].response.id and final.status == "completed"
    assert final.usage.output_tokens == whole.usage.output_tokens


def test_stream_function_call_events(responses, model_id):
    kw = dict(model=model_id, input="What is the weather in Rome?", tools=[WEATHER_TOOL],
              tool_choice="required", max_output_tokens=64, temperature=0)
    whole = responses.create(**kw)
    with responses.stream(**kw) as stream:
        events = list(stream)
        final = stream.get_final_response()
    types = [e.type for e in events]
    assert "response.function_call_arguments.delta" in types
    added = [e for e in events if e.type == "response.output_item.added"]
    assert added[0].item.type == "function_call"
    deltas = "".join(e.delta for e in events
                     if e.type == "response.function_call_arguments.delta")
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert done[0].arguments == deltas
    calls = [item for item in final.output if item.type == "function_call"]
    assert calls[0].arguments == deltas
    assert json.loads(deltas) == json.loads(whole.output[0].arguments)
    assert types[-1] == "response.completed"


def test_stream_over_raw_sse_names_each_event(daemon, model_id):
    r = requests.post(daemon.url("/v1/responses"), json={
        "model": model_id, "input": "Hi", "max_output_tokens": 4, "stream": True},
        stream=True, timeout=60)
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/event-stream")
    blocks = [b for b in r.text.split("\n\n") if b.strip()]
    for block in blocks:
        event_line, data_line = block.split("\n")
        assert event_line.startswith("event: ") and data_line.startswith("data: ")
        assert json.loads(data_line[6:])["type"] == event_line[7:]
    assert "[DONE]" not in r.text
    assert blocks[-1].startswith("event: response.incomplete")  # cut by max_output_tokens


@pytest.mark.parametrize("extra,param", [
    ({"store": True}, "store"),
    ({"previous_response_id": "resp_123"}, "previous_response_id"),
    ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
    ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools[0].name"),
    ({"text": {"format": {"type": "json_schema", "name": "x"}}}, "text.format.schema"),
    ({"max_output_tokens": -1}, "max_output_tokens"),
    ({"input": [{"type": "function_call_output", "call_id": "nope", "output": "x"}]},
     "input[0].call_id"),
])
def test_bad_requests_are_400_naming_the_field(daemon, model_id, extra, param):
    body = {"model": model_id, "input": "Hi", **extra}
    r = requests.post(daemon.url("/v1/responses"), json=body, timeout=30)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == param, error
    assert error["type"] == "invalid_request_error"


def test_sdk_raises_bad_request_for_store_true(responses, model_id):
    openai = pytest.importorskip("openai")
    with pytest.raises(openai.BadRequestError) as e:
        responses.create(model=model_id, input="Hi", store=True)
    assert e.value.body["param"] == "store"
    assert "stateless" in e.value.body["message"]
