"""SSE framing as a plain HTTP client sees it (curl -N)."""
import json
import shutil
import subprocess

import pytest


def curl_stream(daemon, path, body):
    if shutil.which("curl") is None:
        pytest.skip("curl not installed")
    out = subprocess.run(
        ["curl", "-sS", "-N", "-i", "-H", "Content-Type: application/json", "-d", json.dumps(body),
         daemon.url(path)], capture_output=True, timeout=120, check=True)
    return out.stdout.decode("utf-8")


def split_events(raw):
    head, _, body = raw.partition("\r\n\r\n")
    return head, body


def test_chat_sse_framing(daemon):
    raw = curl_stream(daemon, "/v1/chat/completions",
                      {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 5,
                       "stream": True, "stream_options": {"include_usage": True}})
    head, body = split_events(raw)
    assert "text/event-stream" in head.lower()
    assert "x-request-id:" in head.lower()
    # Each event is exactly "data: <payload>\n\n"; the stream ends with [DONE].
    assert body.endswith("data: [DONE]\n\n")
    events = [e for e in body.split("\n\n") if e]
    for e in events:
        assert e.startswith("data: "), e
        assert "\n" not in e
    payloads = [json.loads(e[6:]) for e in events[:-1]]
    assert payloads[0]["object"] == "chat.completion.chunk"
    assert payloads[0]["choices"][0]["delta"]["role"] == "assistant"
    assert payloads[-1]["choices"] == [] and payloads[-1]["usage"]["total_tokens"] > 0
    ids = {p["id"] for p in payloads}
    assert len(ids) == 1


def test_completion_sse_framing(daemon):
    raw = curl_stream(daemon, "/v1/completions",
                      {"prompt": "Hello", "max_tokens": 4, "stream": True})
    _, body = split_events(raw)
    events = [e for e in body.split("\n\n") if e]
    assert events[-1] == "data: [DONE]"
    last = json.loads(events[-2][6:])
    assert last["object"] == "text_completion"
    assert last["choices"][0]["finish_reason"] in ("stop", "length")
