"""The overload load of tests/soak/test_soak_overload.py (which asserts what happens) and of
bench/robustness/overload_rejection.py (which reports how fast the excess is turned away): requests
at 5x the sustainable rate, every fourth over gRPC (Complete, unary), the rest over HTTP, each on
its own connection like a fleet of independent clients."""
import asyncio
import json
import time
from dataclasses import dataclass, field

import grpc

import soak_util

# The engine runs at most MAX_NUM_SEQS requests and lets MAX_WAITING wait; beyond that, 429.
# (With the default max_num_seqs the CPU engine simply batches 5x the load and rejects nothing.)
MAX_NUM_SEQS = 4
MAX_WAITING = 4
BODY = {"prompt": "Count to ten:", "max_tokens": 8, "temperature": 0, "ignore_eos": True}
# One engine compute thread: on a 2-core machine the engine's pool would otherwise hold both
# cores (busy between steps) and starve the client.
DAEMON_ARGS = ("--engine.max-num-seqs", str(MAX_NUM_SEQS), "--engine.threads", "1",
               "--server.max-waiting-requests", str(MAX_WAITING), "--server.http-threads", "256")


class Reply:
    def __init__(self, status, headers, body):
        self.status_code, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)


async def post(daemon, path, body):
    """One request on its own connection, in a minimal HTTP/1.1 client: httpx spends 3-5 ms of
    Python per request on the loaded 2-core machine, more than the daemon's whole rejection path
    (~1 ms), and would dominate the benchmark's latencies."""
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
    """Appends (status or "error", seconds, Reply or error text)."""
    t0 = time.perf_counter()
    try:
        r = await post(daemon, "/v1/completions", BODY)
    except (OSError, asyncio.IncompleteReadError, ValueError) as e:
        out.append(("error", time.perf_counter() - t0, repr(e)))
        return
    out.append((r.status_code, time.perf_counter() - t0, r))


async def one_grpc(stub, pb2, out):
    """Appends (status code name, seconds, response or details)."""
    t0 = time.perf_counter()
    try:
        r = await stub.Complete(pb2.GenerateRequest(prompt=BODY["prompt"],
                                                    max_tokens=BODY["max_tokens"], temperature=0,
                                                    ignore_eos=True), timeout=300)
    except grpc.aio.AioRpcError as e:
        out.append((e.code().name, time.perf_counter() - t0, e.details()))
        return
    out.append(("OK", time.perf_counter() - t0, r))


async def measure_sustainable(daemon, concurrency=MAX_NUM_SEQS, n=4 * MAX_NUM_SEQS):
    """Completions per second with `concurrency` closed-loop clients (a full batch, nothing
    waiting), and their outcomes. Should a 429 still happen (a burst seen as waiting before the
    engine picks it up), it is retried after 50 ms: it lowers the rate but is not an outcome."""
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
    return n / (time.perf_counter() - t0), out


@dataclass
class Round:
    rate: float = 0.0         # sustainable completions/s
    offered: float = 0.0      # requests/s offered (5x rate)
    calibration: list = field(default_factory=list)  # outcomes of measure_sustainable
    http: list = field(default_factory=list)         # outcomes of one()
    grpc: list = field(default_factory=list)         # outcomes of one_grpc()
    rss_before: int = 0
    rss_after: int = 0
    metrics_after: dict = field(default_factory=dict)  # /metrics once idle


async def overload_round(daemon, pb, duration_s):
    """Calibrates, then offers 5x the sustainable rate for duration_s; waits until idle."""
    r = Round()
    async with grpc.aio.insecure_channel(daemon.grpc_target) as channel:
        stub = pb[1].GenerationStub(channel)
        await one_grpc(stub, pb[0], [])  # connects the channel before the clock starts
        r.rate, r.calibration = await measure_sustainable(daemon)
        r.rss_before = soak_util.rss_bytes(daemon.proc.pid)
        r.offered = 5 * r.rate
        tasks = []
        t0 = time.perf_counter()
        i = 0
        while time.perf_counter() - t0 < duration_s:
            tasks.append(asyncio.ensure_future(one_grpc(stub, pb[0], r.grpc) if i % 4 == 3 else
                                               one(daemon, r.http)))
            i += 1
            await asyncio.sleep(max(0.0, t0 + i / r.offered - time.perf_counter()))
        await asyncio.gather(*tasks)
        r.rss_after = soak_util.rss_bytes(daemon.proc.pid)
    import httpx
    async with httpx.AsyncClient() as client:
        r.metrics_after = await soak_util.wait_idle(client, daemon)
    return r


def percentile_ms(seconds, q):
    s = sorted(seconds)
    return s[min(len(s) - 1, int(q * len(s)))] * 1e3 if s else float("nan")
