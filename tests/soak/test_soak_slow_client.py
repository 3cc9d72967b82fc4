"""Slow clients: a reader that never reads its stream does not block other requests or the engine;
its output buffer is bounded (--server.stream-buffer-tokens) and the request is aborted when the
bound is hit, freeing its KV blocks."""
import json
import socket
import time

import requests

import soak_util
from soak_util import soak_daemon  # noqa: F401 (fixtures)

BUFFER_TOKENS = 16


def never_reader(daemon, max_tokens):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)  # before connect: small window
    s.connect(("127.0.0.1", daemon.http_port))
    body = json.dumps({"prompt": "Tell me a very long story:", "max_tokens": max_tokens,
                       "ignore_eos": True, "stream": True}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    return s


def test_never_reading_client_is_bounded(soak_daemon):
    daemon = soak_daemon("--server.stream-buffer-tokens", str(BUFFER_TOKENS))
    finished0 = soak_util.parse_metrics(requests.get(daemon.url("/metrics"), timeout=10).text)
    ctx = int(requests.get(daemon.url("/v1/models"), timeout=10).json()["data"][0].get(
        "max_model_len", 2048))
    max_tokens = min(ctx - 32, 4000)  # far more SSE bytes than the socket buffers hold
    t_start = time.monotonic()
    slow = [never_reader(daemon, max_tokens) for _ in range(2)]
    try:
        # Others are served normally while the slow readers sit on their sockets.
        for i in range(4):
            t0 = time.monotonic()
            r = requests.post(daemon.url("/v1/completions"),
                              json={"prompt": f"Quick {i}", "max_tokens": 4}, timeout=60)
            assert r.status_code == 200, r.text
            assert time.monotonic() - t0 < 30
        # The slow requests end (aborted at the bound, or finished if the kernel buffers held all).
        end = time.monotonic() + (600 if soak_util.LONG else 120)
        m = {}
        while time.monotonic() < end:
            m = soak_util.parse_metrics(requests.get(daemon.url("/metrics"), timeout=10).text)
            if m.get("llmserve_requests_running") == 0:
                break
            time.sleep(0.25)
        assert m.get("llmserve_requests_running") == 0, "a never-reading client is still running"
        assert m.get("llmserve_kv_cache_blocks_free") == m.get("llmserve_kv_cache_blocks_total")
        aborted = sum(v for k, v in m.items()
                      if k.startswith("llmserve_requests_finished_total") and "abort" in k) - sum(
            v for k, v in finished0.items()
            if k.startswith("llmserve_requests_finished_total") and "abort" in k)
        gen = m.get("llmserve_generation_tokens_total", 0) - finished0.get(
            "llmserve_generation_tokens_total", 0)
        print(f"slow clients: {aborted:.0f} of {len(slow)} never-readers (max_tokens {max_tokens}) "
              f"aborted at the bound after {time.monotonic() - t_start:.1f} s; {gen:.0f} tokens "
              f"generated in all (incl. 4 x 4 quick ones)")
        assert aborted == len(slow)
    finally:
        for s in slow:
            s.close()
    assert requests.get(daemon.url("/ready"), timeout=10).status_code == 200
