"""Overload: requests at 5x the sustainable rate, over HTTP and gRPC. The excess is rejected fast
(429/503 with Retry-After, gRPC RESOURCE_EXHAUSTED; p99 <= 10 ms measured by the client), admitted
requests complete, the daemon's memory stays bounded."""
import asyncio
import json
import time

import pytest

import soak_util
from soak_util import soak_daemon, pb  # noqa: F401 (fixtures)

httpx = pytest.importorskip("httpx")
grpc = pytest.importorskip("grpc")

DURATION_S = 300 if soak_util.LONG else 12
# The engine runs at most MAX_NUM_SEQS requests and lets MAX_WAITING wait; beyond that, 429.
# (With the default max_num_seqs the CPU engine simply batches 5x the load and rejects nothing.)
MAX_NUM_SEQS = 4
MAX_WAITING = 4
BODY = {"prompt": "Count to ten:", "max_tokens": 8, "temperature": 0, "ignore_eos": True}


class Reply:
    def __init__(self, status, headers, body):
        self.status_code, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)


async def post(daemon, path, body):
    """One request on its own connection (like a fleet of independent clients), in a minimal
    HTTP/1.1 client: httpx spends 3-5 ms of Python per request on the loaded 2-core machine,
    more than the daemon's whole rejection path (~1 ms), and would dominate the p99."""
    data = json.dumps(body).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", daemon.http_port)
    try:
        writer.write(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
                     .encode() + data)
        await writer.drain()
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        headers = {}
        for line in head[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        n = int(headers.get("content-length", "-1"))
        payload = await (reader.readexactly(n) if n >= 0 else reader.read())
        return Reply(int(head[0].split()[1]), headers, payload)
    finally:
        writer.close()


async def one(daemon, out):
    t0 = time.perf_counter()
    try:
        r = await post(daemon, "/v1/completions", BODY)
    except (OSError, asyncio.IncompleteReadError, ValueError) as e:
        out.append(("error", time.perf_counter() - t0, repr(e)))
        return
    out.append((r.status_code, time.perf_counter() - t0, r))


async def measure_sustainable(daemon, concurrency=MAX_NUM_SEQS, n=4 * MAX_NUM_SEQS):
    """Completions per second with `concurrency` closed-loop clients (a full batch, nothing
    waiting). Should a 429 still happen (a burst seen as waiting before the engine picks it up),
    it is retried after 50 ms: it lowers the rate but does not fail the measurement."""
    t0 = time.perf_counter()
    out = []
    sem = asyncio.Semaphore(concurrency)

    async def limited():
        async with sem:
            while True:
                attempt = []
                await one(daemon, attempt)
                if attempt[0][0] not in (429, 503):
                    out.extend(attempt)
                    return
                await asyncio.sleep(0.05)

    await asyncio.gather(*[limited() for _ in range(n)])
    assert all(o[0] == 200 for o in out), [o[:2] for o in out]
    return n / (time.perf_counter() - t0)


async def one_grpc(stub, pb2, out):
    t0 = time.perf_counter()
    try:
        r = await stub.Complete(pb2.GenerateRequest(prompt=BODY["prompt"],
                                                    max_tokens=BODY["max_tokens"], temperature=0,
                                                    ignore_eos=True), timeout=300)
    except grpc.aio.AioRpcError as e:
        out.append((e.code().name, time.perf_counter() - t0, e.details()))
        return
    out.append(("OK", time.perf_counter() - t0, r))


def p99_ms(lat):
    lat = sorted(lat)
    return lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1e3


async def run(daemon, pb):
    async with grpc.aio.insecure_channel(daemon.grpc_target) as channel:
        stub = pb[1].GenerationStub(channel)
        await one_grpc(stub, pb[0], [])  # connects the channel before the clock starts
        rate = await measure_sustainable(daemon)
        rss0 = soak_util.rss_bytes(daemon.proc.pid)
        target = 5 * rate
        out, grpc_out, tasks = [], [], []
        t0 = time.perf_counter()
        i = 0
        while time.perf_counter() - t0 < DURATION_S:
            # Every fourth request over gRPC (Complete, unary), the rest over HTTP.
            tasks.append(asyncio.ensure_future(one_grpc(stub, pb[0], grpc_out) if i % 4 == 3 else
                                               one(daemon, out)))
            i += 1
            await asyncio.sleep(max(0.0, t0 + i / target - time.perf_counter()))
        await asyncio.gather(*tasks)
        rss1 = soak_util.rss_bytes(daemon.proc.pid)
    async with httpx.AsyncClient() as client:
        m = await soak_util.wait_idle(client, daemon)

    ok = [o for o in out if o[0] == 200]
    rejected = [o for o in out if o[0] in (429, 503)]
    other = [o for o in out if o[0] not in (200, 429, 503)]
    assert not other, [(o[0], o[2] if isinstance(o[2], str) else o[2].body[:200])
                       for o in other[:5]]
    assert rejected, "no request was rejected at 5x the sustainable rate"
    assert all("retry-after" in o[2].headers for o in rejected)
    assert all(o[2].json()["choices"][0]["finish_reason"] == "length" for o in ok)
    g_ok = [o for o in grpc_out if o[0] == "OK"]
    g_rej = [o for o in grpc_out if o[0] == "RESOURCE_EXHAUSTED"]
    g_other = [o for o in grpc_out if o[0] not in ("OK", "RESOURCE_EXHAUSTED")]
    assert not g_other, g_other[:5]
    assert g_rej, "no gRPC request was rejected at 5x the sustainable rate"
    lat = sorted(o[1] for o in rejected)
    p99, g_p99 = p99_ms(lat), p99_ms([o[1] for o in g_rej])
    print(f"overload: sustainable {rate:.1f} req/s, offered {target:.1f} req/s for {DURATION_S} s: "
          f"HTTP {len(ok)} admitted, {len(rejected)} rejected, reject p50 "
          f"{lat[len(lat) // 2] * 1e3:.1f} ms p99 {p99:.1f} ms; gRPC {len(g_ok)} admitted, "
          f"{len(g_rej)} RESOURCE_EXHAUSTED, p99 {g_p99:.1f} ms; RSS {rss0 >> 20} -> "
          f"{rss1 >> 20} MiB")
    assert m.get("llmserve_kv_cache_blocks_free") == m.get("llmserve_kv_cache_blocks_total")
    assert rss1 < rss0 * 1.5
    return p99, g_p99


def test_overload(soak_daemon, pb):
    # One engine compute thread: on the 2-core test machine the engine's pool would otherwise hold
    # both cores (busy between steps), and the p99 would time the scheduling of this Python client
    # rather than the daemon's rejection path (~1 ms).
    daemon = soak_daemon("--engine.max-num-seqs", str(MAX_NUM_SEQS), "--engine.threads", "1",
                         "--server.max-waiting-requests", str(MAX_WAITING),
                         "--server.http-threads", "256")
    # Everything but the latency bar must hold on every attempt; the p99 is a timing figure on a
    # shared machine, so one more overload round is allowed (at most 3) before it counts as missed.
    attempts = []
    for _ in range(3):
        p99, g_p99 = asyncio.run(run(daemon, pb))
        assert daemon.proc.poll() is None
        attempts.append((p99, g_p99))
        if p99 <= 10.0 and g_p99 <= 10.0:
            break
    print("overload p99 (HTTP, gRPC) per attempt, ms: " +
          ", ".join(f"({h:.1f}, {g:.1f})" for h, g in attempts))
    assert attempts[-1][0] <= 10.0, f"HTTP rejection p99 {attempts[-1][0]:.1f} ms"
    assert attempts[-1][1] <= 10.0, f"gRPC rejection p99 {attempts[-1][1]:.1f} ms"
