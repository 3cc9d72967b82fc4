"""Client disconnects free their KV blocks; /metrics exposes every issue-5 metric, the labelled
counters exist at 0 from start-up, and the counters and histograms move by what requests did."""
import json
import socket
import time

import pytest
import requests

METRICS = [
    "llmserve_requests_running", "llmserve_requests_waiting", "llmserve_kv_cache_usage_ratio",
    "llmserve_kv_cache_blocks_total", "llmserve_kv_cache_blocks_free",
    "llmserve_prompt_tokens_total", "llmserve_generation_tokens_total",
    "llmserve_requests_finished_total", "llmserve_preemptions_total",
    "llmserve_prefix_cache_queries_total", "llmserve_prefix_cache_hits_total",
    "llmserve_http_requests_total", "llmserve_grpc_requests_total",
    "llmserve_requests_rejected_total", "llmserve_time_to_first_token_seconds",
    "llmserve_inter_token_latency_seconds", "llmserve_e2e_request_latency_seconds",
    "llmserve_request_queue_time_seconds", "llmserve_request_prefill_time_seconds",
    "llmserve_request_decode_time_seconds", "llmserve_iteration_tokens",
    "process_resident_memory_bytes", "process_start_time_seconds",
]


def test_every_metric_is_exposed(daemon):
    r = requests.get(daemon.url("/metrics"), timeout=10)
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    for name in METRICS:
        assert f"# TYPE {name} " in r.text, name


FINISH_REASONS = ("stop", "length", "abort", "timeout", "error")
REJECT_REASONS = ("draining", "not_ready", "queue_full", "too_many_concurrent")
GRPC_METHODS = ("Generate", "Complete", "Tokenize", "Detokenize", "ListModels")
HTTP_ROUTES = ("/v1/completions", "/v1/chat/completions", "/v1/models", "/tokenize",
               "/detokenize", "/version", "/health", "/ready", "/metrics")


def test_labelled_counters_exist_at_zero_from_start(start_daemon):
    d = start_daemon()  # fresh: only wait_ready's GET /ready calls came before this scrape
    m = d.scrape()
    for reason in REJECT_REASONS:
        assert m.value("llmserve_requests_rejected_total", reason=reason) == 0, reason
    for method in GRPC_METHODS:
        assert m.value("llmserve_grpc_requests_total", method=method, code="OK") == 0, method
    for route in HTTP_ROUTES:
        assert m.has("llmserve_http_requests_total", route=route, code="200"), route
    for route in ("/v1/completions", "/v1/chat/completions", "/v1/models", "/tokenize"):
        assert m.value("llmserve_http_requests_total", route=route, code="200") == 0, route
    for reason in FINISH_REASONS:
        assert m.value("llmserve_requests_finished_total", reason=reason) == 0, reason
    assert m.value("llmserve_time_to_first_token_seconds_count") == 0
    assert m.value("llmserve_time_to_first_token_seconds_bucket", le="+Inf") == 0


def settled_scrape(daemon, done, timeout=10):
    """Scrapes until `done(scrape)` holds with nothing running or waiting (stats are published
    once a step ends, counters of the HTTP route once the response is sent)."""
    end = time.time() + timeout
    while True:
        m = daemon.scrape()
        quiet = (m.value("llmserve_requests_running") == 0
                 and m.value("llmserve_requests_waiting") == 0)
        if (quiet and done(m)) or time.time() > end:
            return m
        time.sleep(0.05)


def test_counters_and_histograms_move_with_requests(daemon):
    idle = daemon.metric("llmserve_kv_cache_usage_ratio")
    assert wait_idle(daemon, idle)
    before = daemon.scrape()
    max_tokens = 7
    usages = []
    for prompt in ("Count from one to ten:", "Three colours of the rainbow are"):
        r = requests.post(daemon.url("/v1/completions"), timeout=120,
                          json={"prompt": prompt, "max_tokens": max_tokens, "ignore_eos": True,
                                "temperature": 0})
        r.raise_for_status()
        body = r.json()
        assert body["choices"][0]["finish_reason"] == "length"
        usages.append(body["usage"])
    route = {"route": "/v1/completions", "code": "200"}
    after = settled_scrape(daemon, lambda m: (
        m.total("llmserve_requests_finished_total")
        >= before.total("llmserve_requests_finished_total") + 2
        and m.rose(before, "llmserve_http_requests_total", **route) >= 2))

    assert [u["completion_tokens"] for u in usages] == [max_tokens, max_tokens]
    assert after.rose(before, "llmserve_generation_tokens_total") == 2 * max_tokens
    assert after.rose(before, "llmserve_prompt_tokens_total") == sum(
        u["prompt_tokens"] for u in usages)
    assert after.rose(before, "llmserve_requests_finished_total", reason="length") == 2
    for reason in FINISH_REASONS:
        if reason != "length":
            assert after.rose(before, "llmserve_requests_finished_total", reason=reason) == 0
    assert after.rose(before, "llmserve_http_requests_total", **route) == 2
    # One observation per request, in _count and in the +Inf bucket alike.
    for h in ("time_to_first_token_seconds", "e2e_request_latency_seconds",
              "request_queue_time_seconds", "request_prefill_time_seconds",
              "request_decode_time_seconds"):
        name = f"llmserve_{h}"
        assert after.rose(before, name + "_count") == 2, h
        assert after.rose(before, name + "_bucket", le="+Inf") == 2, h
        assert after.rose(before, name + "_sum") >= 0, h
    assert after.rose(before, "llmserve_e2e_request_latency_seconds_sum") > 0
    # Every token after a request's first is one inter-token gap.
    assert after.rose(before, "llmserve_inter_token_latency_seconds_count") == 2 * (max_tokens - 1)
    # Tokens run per step: the prompts less what the prefix cache held, then one per decode.
    computed_prompt = (after.rose(before, "llmserve_prompt_tokens_total")
                       - after.rose(before, "llmserve_prefix_cache_hits_total"))
    assert after.rose(before, "llmserve_iteration_tokens_sum") == (
        computed_prompt + 2 * (max_tokens - 1))
    assert after.value("llmserve_kv_cache_usage_ratio") == idle


def wait_idle(daemon, idle_ratio, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        if (daemon.metric("llmserve_requests_running") == 0
                and daemon.metric("llmserve_kv_cache_usage_ratio") == idle_ratio):
            return True
        time.sleep(0.1)
    return False


def start_raw_stream(daemon, body):
    """Sends a streaming request on a raw socket and reads until the first data event."""
    s = socket.create_connection(("127.0.0.1", daemon.http_port), timeout=60)
    payload = json.dumps(body).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              + f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
    buf = b""
    while b"data: " not in buf:
        chunk = s.recv(4096)
        assert chunk, buf
        buf += chunk
    return s


def test_disconnect_mid_stream_frees_kv(daemon):
    idle = daemon.metric("llmserve_kv_cache_usage_ratio")
    assert wait_idle(daemon, idle)
    socks = [start_raw_stream(daemon, {"prompt": f"Story number {i}:", "max_tokens": 1000,
                                       "ignore_eos": True, "stream": True}) for i in range(3)]
    assert daemon.metric("llmserve_requests_running") >= 1
    for s in socks:
        s.close()
    assert wait_idle(daemon, idle), "KV blocks not released after disconnect"
    aborted = [l for l in requests.get(daemon.url("/metrics"), timeout=10).text.splitlines()
               if l.startswith('llmserve_requests_finished_total{reason="abort"}')]
    assert aborted and float(aborted[0].split()[-1]) >= 3


@pytest.mark.parametrize("method", ["DELETE /v1/requests/{id}", "POST /v1/requests/{id}/cancel"])
def test_cancel_by_id(daemon, method):
    idle = daemon.metric("llmserve_kv_cache_usage_ratio")
    rid = "to-cancel-" + method.split()[0].lower()
    with requests.post(daemon.url("/v1/completions"), stream=True, timeout=120,
                       headers={"X-Request-Id": rid},
                       json={"prompt": "Go on forever:", "max_tokens": 1000, "ignore_eos": True,
                             "stream": True}) as r:
        lines = r.iter_lines()
        next(line for line in lines if line.startswith(b"data: "))
        verb, path = method.split()
        d = requests.request(verb, daemon.url(path.format(id=rid)), timeout=10)
        assert d.status_code == 200, d.text
        finishes = [json.loads(line[6:])["choices"][0]["finish_reason"]
                    for line in lines if line.startswith(b"data: {")]
    assert "abort" in finishes
    assert wait_idle(daemon, idle)
