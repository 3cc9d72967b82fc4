"""Native tool formats of real chat templates through the openai SDK against a live daemon whose
model is given the template (the default model follows any format a grammar holds it to):
Mistral-Nemo's [TOOL_CALLS] (tests/fixtures/chat/templates/mistral_nemo.jinja). The calls are
checked with jsonschema, and sent back in a second turn that the template itself renders: its
raise_exception refuses call ids that are not 9 letters and digits."""
import json
import re

import pytest
import requests

from conftest import ROOT, Daemon, serve_available

openai = pytest.importorskip("openai")
jsonschema = pytest.importorskip("jsonschema")

TEMPLATES = ROOT / "tests" / "fixtures" / "chat" / "templates"
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}},
                   "required": ["city"], "additionalProperties": False}}}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="module")
def mistral_daemon():
    why = serve_available()
    if why:
        pytest.skip(why)
    d = Daemon(["--server.served-model-name", "m", "--chat-template",
                str(TEMPLATES / "mistral_nemo.jinja")]).wait_ready()
    yield d
    d.stop()


@pytest.mark.parametrize("stream", [False, True])
def test_mistral_forced_calls_parse_and_go_back_to_the_template(mistral_daemon, stream):
    assert "tool format mistral" in mistral_daemon.logs()
    client = openai.OpenAI(base_url=mistral_daemon.url("/v1"), api_key="x", max_retries=0)
    kw = dict(model="m", messages=ASK, tools=[WEATHER], tool_choice="required", max_tokens=60,
              temperature=0)
    if stream:
        calls = {}
        finish = None
        for chunk in client.chat.completions.create(stream=True, **kw):
            for ch in chunk.choices:
                for tc in ch.delta.tool_calls or []:
                    c = calls.setdefault(tc.index, {"id": None, "name": None, "arguments": ""})
                    c["id"] = tc.id or c["id"]
                    c["name"] = (tc.function.name if tc.function else None) or c["name"]
                    c["arguments"] += (tc.function.arguments or "") if tc.function else ""
                finish = ch.finish_reason or finish
        assert finish == "tool_calls"
        got = [calls[i] for i in sorted(calls)]
    else:
        ch = client.chat.completions.create(**kw).choices[0]
        assert ch.finish_reason == "tool_calls"
        got = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
               for c in ch.message.tool_calls]
    assert got
    for c in got:
        assert c["name"] == "get_weather"
        assert re.fullmatch(r"[a-zA-Z0-9]{9}", c["id"]), c["id"]
        jsonschema.validate(json.loads(c["arguments"]), WEATHER["function"]["parameters"])
    history = ASK + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"]}} for c in got]}]
    history += [{"role": "tool", "tool_call_id": c["id"], "content": "21 C, clear"} for c in got]
    r = requests.post(mistral_daemon.url("/v1/chat/completions"), json={
        "model": "m", "messages": history, "tools": [WEATHER], "max_tokens": 5}, timeout=60)
    assert r.status_code == 200, r.text
    rendered = requests.post(mistral_daemon.url("/v1/chat/completions/render"), json={
        "messages": history, "tools": [WEATHER]}, timeout=60)
    assert rendered.status_code == 200, rendered.text
