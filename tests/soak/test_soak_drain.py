"""Drain: SIGTERM with 64 streams in flight -> all 64 complete, new requests get 503 (or find the
listener closed), exit code 0."""
import asyncio
import json
import signal
import time

import pytest

import soak_util
from soak_util import soak_daemon  # noqa: F401 (fixtures)

httpx = pytest.importorskip("httpx")

STREAMS = 64
MAX_TOKENS = 32


async def run(daemon):
    limits = httpx.Limits(max_connections=STREAMS * 2, max_keepalive_connections=0)
    async with httpx.AsyncClient(limits=limits) as client:
        first = [asyncio.Event() for _ in range(STREAMS)]

        async def stream(i):
            body = {"prompt": f"Drain test {i}:", "max_tokens": MAX_TOKENS, "temperature": 0,
                    "ignore_eos": True, "stream": True}
            text, finish, events = "", None, 0
            async with client.stream("POST", daemon.url("/v1/completions"), json=body,
                                     timeout=300) as r:
                assert r.status_code == 200, r.status_code
                async for line in r.aiter_lines():
                    if line.startswith("data: ") and line != "data: [DONE]":
                        events += 1
                        first[i].set()
                        c = json.loads(line[6:])["choices"][0]
                        text += c.get("text", "")
                        finish = c.get("finish_reason") or finish
            first[i].set()
            return finish

        tasks = [asyncio.ensure_future(stream(i)) for i in range(STREAMS)]
        await asyncio.wait_for(asyncio.gather(*[e.wait() for e in first[:8]]), timeout=300)
        # "In flight" means the engine holds all of them (running or waiting), not merely that
        # the client started them: on a fast machine the first tokens arrive before the last
        # connections are accepted.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            m = await soak_util.metrics(client, daemon)
            held = m.get("llmserve_requests_running", 0) + m.get("llmserve_requests_waiting", 0)
            done = sum(t.done() for t in tasks)
            if held + done >= STREAMS:
                break
            await asyncio.sleep(0.02)
        daemon.proc.send_signal(signal.SIGTERM)
        await asyncio.sleep(0.2)
        try:
            r = await client.post(daemon.url("/v1/completions"),
                                  json={"prompt": "late", "max_tokens": 2}, timeout=30)
            late = r.status_code
        except httpx.ConnectError:
            late = "refused"
        finishes = await asyncio.gather(*tasks, return_exceptions=True)
    return late, finishes


def test_drain(soak_daemon):
    daemon = soak_daemon("--server.http-threads", str(STREAMS + 16),
                         "--server.shutdown-grace-seconds", "120")
    late, finishes = asyncio.run(run(daemon))
    code = daemon.proc.wait(timeout=150)
    print(f"drain: {sum(f == 'length' for f in finishes)}/{STREAMS} completed, late request -> "
          f"{late}, exit {code}")
    assert all(f == "length" for f in finishes), [f for f in finishes if f != "length"]
    assert late in (503, "refused")
    assert code == 0
