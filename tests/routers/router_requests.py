"""OpenAI requests as a router's client sends them, reduced to what must match: the text."""
import json

import requests

CHAT = [{"role": "user", "content": "Name three colors of the rainbow."}]
PROMPT = "The capital of France is"


def body(kind: str, model: str, stream: bool, max_tokens: int = 12, **extra) -> dict:
    b = {"model": model, "max_tokens": max_tokens, "temperature": 0, "stream": stream, **extra}
    if kind == "chat":
        b["messages"] = extra.pop("messages", CHAT)
    else:
        b["prompt"] = extra.pop("prompt", PROMPT)
    return b


def path(kind: str) -> str:
    return "/v1/chat/completions" if kind == "chat" else "/v1/completions"


def text_of(base_url: str, kind: str, model: str, stream: bool, headers=None, **extra) -> str:
    """The generated text, joined from SSE deltas when streamed."""
    r = requests.post(base_url + path(kind), json=body(kind, model, stream, **extra),
                      headers=headers or {}, timeout=120, stream=stream)
    assert r.status_code == 200, r.text
    if not stream:
        choice = r.json()["choices"][0]
        return choice["message"]["content"] if kind == "chat" else choice["text"]
    out = []
    done = False
    for line in r.iter_lines(decode_unicode=True):
        if not line or not line.startswith("data: "):
            continue
        data = line[len("data: "):]
        if data == "[DONE]":
            done = True
            break
        chunk = json.loads(data)
        for c in chunk.get("choices", []):
            piece = c["delta"].get("content") if kind == "chat" else c.get("text")
            out.append(piece or "")
    assert done, "the stream ended without [DONE]"
    return "".join(out)
