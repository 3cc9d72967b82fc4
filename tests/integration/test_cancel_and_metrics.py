"""Client disconnects free their KV blocks; /metrics exposes every issue-5 metric."""
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
