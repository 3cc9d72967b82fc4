"""A corpus of over 100 bad requests: each gets the right 4xx and OpenAI's error shape, nothing
reaches the engine, and the daemon stays healthy."""
import json

import pytest
import requests

MSG = [{"role": "user", "content": "hi"}]


def cmpl(**kw):
    body = {"prompt": "hi", "max_tokens": 2}
    body.update(kw)
    return ("/v1/completions", json.dumps(body).encode())


def chat(**kw):
    body = {"messages": MSG, "max_tokens": 2}
    body.update(kw)
    return ("/v1/chat/completions", json.dumps(body).encode())


def raw(path, data):
    return (path, data if isinstance(data, bytes) else data.encode())


def corpus():
    c = []
    # Malformed JSON and wrong top-level types.
    for text in ["", "{", "}", "{\"prompt\":", "{\"prompt\":\"x\",}", "[]", "\"x\"", "null", "42",
                 "{'prompt':'x'}", "{\"prompt\":\"x\"} junk", "{\"prompt\" \"x\"}", "nan"]:
        c.append(("json " + text[:12], raw("/v1/completions", text), 400, None))
    c.append(("chat bad json", raw("/v1/chat/completions", "{\"messages\":[}"), 400, None))
    # Invalid UTF-8 inside JSON strings.
    for i, bad in enumerate([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80",
                             b"\xe2\x82"]):
        c.append((f"utf8 {i}", raw("/v1/completions", b'{"prompt":"a' + bad + b'"}'), 400, None))
    c.append(("utf8 chat", raw("/v1/chat/completions",
                               b'{"messages":[{"role":"user","content":"\xff"}]}'), 400, None))
    # Prompt shapes.
    for p in [None, "", [], 5, True, {"a": 1}, ["a", 1], [1, "a"], [-1], [10 ** 9], [1.5],
              [[1], []], [[1], 2], [None], ["a", ""]]:
        c.append((f"prompt {p!r}"[:40], cmpl(prompt=p), 400, "prompt"))
    c.append(("no prompt", raw("/v1/completions", '{"max_tokens":2}'), 400, "prompt"))
    # Unsupported features.
    c += [("echo n=2", cmpl(echo=True, n=2), 400, "echo"),
          ("chat echo", chat(echo=True), 400, "echo"),
          ("prompt_logprobs 21", cmpl(prompt_logprobs=21), 400, "prompt_logprobs"),
          ("max_tokens 0", cmpl(max_tokens=0), 400, "max_tokens"),
          ("suffix", cmpl(suffix="x"), 400, "suffix"),
          ("best_of", cmpl(best_of=3), 400, "best_of"),
          ("tools", chat(tools=[{"type": "function"}]), 400, "tools[0].function"),
          ("response_format", chat(response_format={"type": "xml"}), 400,
           "response_format"),
          ("model", cmpl(model="gpt-4"), 404, "model"), ("model type", cmpl(model=5), 400, "model"),
          ("chat model", chat(model="gpt-4"), 404, "model")]
    # Out-of-range and wrong-typed sampling fields (negative, huge, strings, floats).
    bad_values = {
        "max_tokens": [-1, 0, "10", 1.5, True, 1e30, 3_000_000_000],
        "temperature": [-0.1, 2.5, "hot", 1e308, [1]],
        "top_p": [0, 1.01, -1, "1"],
        "top_k": [-2, 0.5, "5"],
        "min_p": [-0.1, 1.5],
        "presence_penalty": [2.1, -3], "frequency_penalty": [5, "x"],
        "repetition_penalty": [0, -1, 11],
        "logit_bias": [[1, 2], {"abc": 1}, {"-1": 1}, {"1.5": 1}, {"5": 101}, {"5": "x"}, "5",
                       {"99999999999": 1}],
        "seed": ["42", 1.5],
        "stop": [5, [1], [""], "", {"a": 1}, ["s%d" % i for i in range(17)]],
        "stop_token_ids": [[-1], "1", [1.5], [10 ** 9]],
        "ignore_eos": ["true", 1],
        "min_tokens": [-1],
        "n": [0, -1, 17, 10 ** 6, "2"],
        "logprobs": [-1, 21, True, "3"],
        "stream": ["yes", 1],
        "priority": ["high", 1e12],
        "timeout": [0, -5, "10", 1e9],
        "user": [5],
    }
    for field, values in bad_values.items():
        for v in values:
            c.append((f"{field}={v!r}"[:40], cmpl(**{field: v}), 400, field))
    c.append(("min>max", cmpl(min_tokens=5, max_tokens=2), 400, "min_tokens"))
    c.append(("stream_options without stream", cmpl(stream_options={"include_usage": True}), 400,
              "stream_options"))
    # Chat messages.
    for m, param in [(None, "messages"), ([], "messages"), ("hi", "messages"), ([5], "messages[0]"),
                     ([{"content": "x"}], "messages[0].role"),
                     ([{"role": "wizard", "content": "x"}], "messages[0].role"),
                     ([{"role": "", "content": "x"}], "messages[0].role"),
                     ([{"role": "user"}], "messages[0].content"),
                     ([{"role": "user", "content": 5}], "messages[0].content"),
                     ([{"role": "user", "content": [{"type": "image_url"}]}],
                      "messages[0].content[0]"),
                     ([{"role": "user", "content": "a"}, {"role": "bot", "content": "b"}],
                      "messages[1].role")]:
        c.append((f"messages {m!r}"[:40], chat(messages=m), 400, param))
    c += [("chat logprobs int", chat(logprobs=3), 400, "logprobs"),
          ("chat top_logprobs alone", chat(top_logprobs=2), 400, "top_logprobs"),
          ("chat top_logprobs big", chat(logprobs=True, top_logprobs=99), 400, "top_logprobs")]
    # Prompts over the context.
    c.append(("prompt over context", cmpl(prompt="hello " * 20000, max_tokens=1), 400, None))
    c.append(("chat over context",
              chat(messages=[{"role": "user", "content": "hello " * 20000}], max_tokens=1), 400,
              None))
    c.append(("max_tokens over context", cmpl(max_tokens=10_000_000), 400, None))
    # 10 MB body: 413.
    c.append(("10 MB body", raw("/v1/completions", b'{"prompt":"' + b"a" * (10 << 20) + b'"}'),
              413, None))
    return c


CORPUS = corpus()


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 100


@pytest.mark.parametrize("name,req,status,param", CORPUS, ids=[c[0] for c in CORPUS])
def test_bad_request(daemon, name, req, status, param):
    path, data = req
    r = requests.post(daemon.url(path), data=data,
                      headers={"Content-Type": "application/json"}, timeout=60)
    assert r.status_code == status, r.text[:500]
    err = r.json()["error"]
    assert isinstance(err["message"], str) and err["message"]
    assert isinstance(err["type"], str)
    assert err["param"] is None or isinstance(err["param"], str)
    assert err["code"] is None or isinstance(err["code"], str)
    if param is not None:
        assert err["param"] == param
    if name in ("prompt over context", "chat over context"):
        assert err["code"] == "context_length_exceeded"
        assert err["param"] == ("messages" if name.startswith("chat") else "prompt")
    if name in ("model", "chat model"):
        assert err["code"] == "model_not_found"


def test_routes_and_methods(daemon):
    assert requests.get(daemon.url("/nope"), timeout=10).status_code == 404
    assert "error" in requests.get(daemon.url("/nope"), timeout=10).json()
    assert requests.get(daemon.url("/v1/completions"), timeout=10).status_code in (404, 405)


def test_daemon_healthy_after_corpus(daemon):
    assert requests.get(daemon.url("/health"), timeout=10).status_code == 200
    assert requests.get(daemon.url("/ready"), timeout=10).status_code == 200
    r = requests.post(daemon.url("/v1/completions"), json={"prompt": "ok", "max_tokens": 2},
                      timeout=60)
    assert r.status_code == 200


def test_request_larger_than_the_whole_kv_cache_is_400_not_429(start_daemon):
    # Issue 23 item 6: 16 MiB holds ~700 tokens of SmolLM2's f16 KV; 800 can never fit.
    d = start_daemon("--engine.kv-cache-bytes", "16MiB")
    assert "exceeds what the KV cache holds" in d.logs()
    r = requests.post(d.url("/v1/completions"), json={"prompt": "hi", "max_tokens": 800},
                      timeout=60)
    assert r.status_code == 400, r.text
    assert "Retry-After" not in r.headers
    err = r.json()["error"]
    assert err["code"] == "context_length_exceeded" and err["param"] == "max_tokens", err
    assert "must be <= " in err["message"]
    fits = int(err["message"].rsplit("<= ", 1)[1])
    ok = requests.post(d.url("/v1/completions"), json={"prompt": "hi", "max_tokens": fits - 1},
                       timeout=300)
    assert ok.status_code == 200, ok.text


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) // 1024
    raise KeyError("VmHWM")


def test_one_huge_word_is_rejected_without_tokenizing_it_all(start_daemon):
    # Issue 23 item 3: "a" x 8,388,508 (a body at the 8 MiB limit) cost +479 MiB of peak RSS
    # and seconds before its 400, 60 bytes per input byte in the tokenizer. Now encoding stops
    # once a prompt passes the context: the body, its JSON string and a few copies remain
    # (measured: +32 MiB for the completion, +88 MiB for the chat with its rendering).
    d = start_daemon()
    requests.post(d.url("/v1/completions"), json={"prompt": "warm up", "max_tokens": 1},
                  timeout=120)
    for path, body in [
            ("/v1/completions", {"prompt": "a" * 8388508, "max_tokens": 1}),
            ("/v1/chat/completions",
             {"messages": [{"role": "user", "content": "a" * 8388460}], "max_tokens": 1})]:
        before = peak_rss_mib(d.proc.pid)
        r = requests.post(d.url(path), data=json.dumps(body),
                          headers={"Content-Type": "application/json"}, timeout=120)
        assert r.status_code == 400, r.text[:300]
        err = r.json()["error"]
        assert err["code"] == "context_length_exceeded", err
        grew = peak_rss_mib(d.proc.pid) - before
        assert grew < 160, f"{path}: peak RSS grew {grew} MiB"
        assert "more than" in err["message"], err["message"]  # the count stopped early


def test_tokenize_unknown_model_is_404(daemon):
    r = requests.post(daemon.url("/tokenize"), json={"model": "no-such-model", "prompt": "hi"},
                      timeout=10)
    assert r.status_code == 404, r.text
    assert r.json()["error"]["code"] == "model_not_found"
