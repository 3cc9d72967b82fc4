"""API keys, and SIGTERM drain with streams in flight (daemons of their own)."""
import json
import signal
import threading
import time

import pytest
import requests


def test_api_keys(start_daemon):
    d = start_daemon("--api-key", "sk-it-1")
    assert requests.get(d.url("/health"), timeout=10).status_code == 200
    assert requests.get(d.url("/ready"), timeout=10).status_code == 200
    r = requests.get(d.url("/v1/models"), timeout=10)
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "invalid_api_key"
    assert requests.get(d.url("/metrics"), timeout=10).status_code == 401
    ok = {"Authorization": "Bearer sk-it-1"}
    assert requests.get(d.url("/v1/models"), headers=ok, timeout=10).status_code == 200
    openai = pytest.importorskip("openai")
    c = openai.OpenAI(base_url=d.url("/v1"), api_key="sk-it-1", max_retries=0)
    assert c.completions.create(model=c.models.list().data[0].id, prompt="Hi",
                                max_tokens=2).choices
    bad = openai.OpenAI(base_url=d.url("/v1"), api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.models.list()


def stream_until_done(url, body, out):
    finishes = []
    with requests.post(url, json=body, stream=True, timeout=300) as r:
        out["status"] = r.status_code
        for line in r.iter_lines():
            if line.startswith(b"data: {"):
                fr = json.loads(line[6:])["choices"][0]["finish_reason"]
                if fr:
                    finishes.append(fr)
            if line == b"data: [DONE]":
                out["done"] = True
    out["finishes"] = finishes


def test_sigterm_drains_in_flight_streams(start_daemon):
    d = start_daemon("--server.shutdown-grace-seconds", "60")
    results = [{} for _ in range(2)]
    threads = [threading.Thread(target=stream_until_done, args=(
        d.url("/v1/completions"),
        {"prompt": f"List {i}:", "max_tokens": 160, "ignore_eos": True, "stream": True}, res))
        for i, res in enumerate(results)]
    for t in threads:
        t.start()
    end = time.time() + 60
    while d.metric("llmserve_requests_running") < 2 and time.time() < end:
        time.sleep(0.05)
    d.proc.send_signal(signal.SIGTERM)
    # While the streams drain the server still answers: new work gets 503 with Retry-After,
    # /ready 503, /health 200 (160 tokens each outlast these checks by seconds).
    time.sleep(0.2)
    r = requests.post(d.url("/v1/completions"), json={"prompt": "late", "max_tokens": 2},
                      timeout=10)
    assert r.status_code == 503, r.text
    assert r.headers.get("Retry-After")
    assert requests.get(d.url("/ready"), timeout=10).status_code == 503
    assert requests.get(d.url("/health"), timeout=10).status_code == 200
    assert d.metric("llmserve_requests_running") == 2  # still draining, not cut
    for t in threads:
        t.join(timeout=120)
    for res in results:
        assert res.get("status") == 200
        assert res.get("done"), res
        assert res["finishes"] == ["length"]
    assert d.proc.wait(timeout=90) == 0
