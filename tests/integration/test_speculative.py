"""Speculative decoding through the daemon with real clients: with `--speculative.method ngram`
streamed (SSE, several tokens may arrive in one step) and unary chat completions give exactly
the text and logprobs of a daemon without it, greedy and seeded; the spec metrics count the
drafts; a bad speculative config stops start-up naming the key."""
import subprocess

import pytest
import requests

from conftest import BIN, MODEL

PROMPTS = [
    "Repeat this list exactly, one item per line: red, green, blue, yellow, purple, orange.",
    "Copy this sentence twice: The quick brown fox jumps over the lazy dog.",
    "Write one sentence about the sea.",
]


def chat(daemon, content, stream, **params):
    body = {"messages": [{"role": "user", "content": content}], "max_tokens": 48,
            "stream": stream, "logprobs": True, "top_logprobs": 2, **params}
    r = requests.post(daemon.url("/v1/chat/completions"), json=body, stream=stream, timeout=300)
    assert r.status_code == 200, r.text
    if not stream:
        choice = r.json()["choices"][0]
        return choice["message"]["content"], choice["logprobs"]["content"]
    text, logprobs = "", []
    import json
    for line in r.iter_lines():
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        for c in chunk.get("choices", []):
            text += c.get("delta", {}).get("content") or ""
            if c.get("logprobs"):
                logprobs += c["logprobs"]["content"]
    return text, logprobs


@pytest.mark.parametrize("params", [{"temperature": 0}, {"temperature": 0.8, "seed": 5}],
                         ids=["greedy", "seeded"])
def test_ngram_output_equals_off(daemon, start_daemon, params):
    spec = start_daemon("--speculative.method", "ngram", "--speculative.draft-token-cost", "0",
                        "--speculative.max-running-requests", "64")
    for prompt in PROMPTS:
        want_text, want_lp = chat(daemon, prompt, stream=False, **params)
        for stream in (False, True):
            text, lp = chat(spec, prompt, stream=stream, **params)
            assert text == want_text, (prompt, stream)
            assert [(t["token"], t["logprob"]) for t in lp] == \
                   [(t["token"], t["logprob"]) for t in want_lp], (prompt, stream)
    drafted = spec.metric("llmserve_spec_decode_num_draft_tokens_total")
    accepted = spec.metric("llmserve_spec_decode_num_accepted_tokens_total")
    assert drafted > 0 and 0 < accepted <= drafted
    assert spec.metric("llmserve_spec_decode_num_drafts_total") > 0
    assert spec.metric("llmserve_kv_cache_usage_ratio") == 0.0
    text = requests.get(spec.url("/metrics"), timeout=10).text
    assert 'llmserve_spec_decode_num_accepted_tokens_per_pos_total{position="0"}' in text


@pytest.mark.parametrize("flags, key", [
    (["--speculative.method", "draft"], "speculative.draft_model"),
    (["--speculative.num-tokens", "0"], "speculative.num_tokens"),
    (["--speculative.method", "draft", "--speculative.draft-model", "/nonexistent/draft.gguf"],
     "/nonexistent/draft.gguf"),
])
def test_bad_speculative_config_stops_startup(flags, key):
    r = subprocess.run([str(BIN), "serve", "--model", str(MODEL), "--http-port", "0",
                        "--grpc-port", "0", *flags], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert key in r.stdout + r.stderr, r.stdout + r.stderr
