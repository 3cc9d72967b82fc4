"""Abort storm: concurrent greedy streams over HTTP and gRPC, 20% of them abandoned at a random
point (queued, mid-prefill, mid-decode, slow reader). After: 0 leaked KV blocks, no crash,
survivors' text equal to an undisturbed run, RSS drift < 5%.
Short: 64 streams, 2 rounds. Long (LLMSERVE_SOAK=long): 256 streams, rounds for 30 minutes."""
import asyncio
import random
import time

import pytest

import soak_util
from soak_util import soak_daemon, pb  # noqa: F401 (fixtures)

httpx = pytest.importorskip("httpx")
grpc = pytest.importorskip("grpc")

STREAMS = 256 if soak_util.LONG else 64
DURATION_S = 1800 if soak_util.LONG else 0
MAX_TOKENS = 24
PROMPTS = [f"Write a short note number {i} about the weather:" for i in range(8)]
MODES = ["queued", "prefill", "decode", "slow"]


async def http_client_task(client, daemon, prompt, mode):
    body = {"prompt": prompt, "max_tokens": MAX_TOKENS, "temperature": 0, "ignore_eos": True}
    if mode is None:
        return await soak_util.sse_completion(client, daemon, body)
    if mode == "queued":  # gone before any byte of the response
        task = asyncio.ensure_future(soak_util.sse_completion(client, daemon, body))
        await asyncio.sleep(random.uniform(0, 0.05))
        task.cancel()
        return None, "client-abort", 0
    if mode == "prefill":
        return await soak_util.sse_completion(client, daemon, body, stop_after_events=1)
    if mode == "decode":
        return await soak_util.sse_completion(client, daemon, body,
                                              stop_after_events=random.randint(2, MAX_TOKENS - 2))
    return await soak_util.sse_completion(client, daemon, body, read_delay=0.2,
                                          stop_after_events=random.randint(2, 6))


async def grpc_client_task(stub, pb2, prompt, mode):
    if mode is None:
        return await soak_util.grpc_generate(stub, pb2, prompt, MAX_TOKENS)
    if mode == "queued":
        return await soak_util.grpc_generate(stub, pb2, prompt, MAX_TOKENS, cancel_before=True)
    if mode == "prefill":
        return await soak_util.grpc_generate(stub, pb2, prompt, MAX_TOKENS, stop_after_msgs=1)
    return await soak_util.grpc_generate(stub, pb2, prompt, MAX_TOKENS,
                                         stop_after_msgs=random.randint(2, MAX_TOKENS - 2))


async def storm_round(daemon, pb, rng, baseline):
    limits = httpx.Limits(max_connections=STREAMS * 2, max_keepalive_connections=0)
    async with httpx.AsyncClient(limits=limits) as client, \
            grpc.aio.insecure_channel(daemon.grpc_target) as channel:
        stub = pb[1].GenerationStub(channel)
        plan = []
        for i in range(STREAMS):
            mode = rng.choice(MODES) if rng.random() < 0.2 else None
            plan.append((i, PROMPTS[i % len(PROMPTS)], mode, "grpc" if i % 2 else "http"))
        tasks = [http_client_task(client, daemon, p, m) if via == "http" else
                 grpc_client_task(stub, pb[0], p, m) for _, p, m, via in plan]
        results = await asyncio.gather(*tasks, return_exceptions=True)
        mismatches, errors = [], []
        for (i, prompt, mode, via), res in zip(plan, results):
            if mode is not None:
                continue  # abandoned: any outcome but a crash is fine
            if isinstance(res, BaseException):
                errors.append(f"{via} #{i}: {res!r}")
                continue
            text, finish = res[0], res[1]
            if finish != "length" or text != baseline[prompt]:
                mismatches.append(f"{via} #{i}: {finish} {text!r} != {baseline[prompt]!r}")
        return plan, mismatches, errors


async def run_storm(daemon, pb):
    rng = random.Random(1234)
    async with httpx.AsyncClient() as client:
        idle = await soak_util.wait_idle(client, daemon)
        assert idle["llmserve_kv_cache_blocks_free"] == idle["llmserve_kv_cache_blocks_total"]
        undisturbed = await asyncio.gather(*[
            soak_util.sse_completion(client, daemon, {"prompt": p, "max_tokens": MAX_TOKENS,
                                                      "temperature": 0, "ignore_eos": True})
            for p in PROMPTS])
        baseline = {p: r[0] for p, r in zip(PROMPTS, undisturbed)}
        assert all(r[1] == "length" for r in undisturbed), undisturbed

    rounds, aborted, rss = 0, 0, []
    end = time.monotonic() + DURATION_S
    while True:
        plan, mismatches, errors = await storm_round(daemon, pb, rng, baseline)
        rounds += 1
        aborted += sum(1 for p in plan if p[2] is not None)
        assert daemon.proc.poll() is None, "daemon died:\n" + daemon.logs()
        assert not errors, errors[:5]
        assert not mismatches, mismatches[:5]
        async with httpx.AsyncClient() as client:
            m = await soak_util.wait_idle(client, daemon)
        assert m.get("llmserve_kv_cache_blocks_free") == m.get("llmserve_kv_cache_blocks_total"), \
            f"leaked KV blocks after round {rounds}: {m}"
        rss.append(soak_util.rss_bytes(daemon.proc.pid))
        if rounds >= 2 and time.monotonic() >= end:
            break
    # The first round warms allocators and caches; drift is measured from its end.
    drift = (max(rss[1:]) - rss[0]) / rss[0]
    print(f"abort storm: {rounds} rounds x {STREAMS} streams, {aborted} abandoned, "
          f"RSS {rss[0] >> 20} -> {rss[-1] >> 20} MiB (max drift {drift:+.2%})")
    assert drift < 0.05, rss


def test_abort_storm(soak_daemon, pb):
    daemon = soak_daemon("--server.http-threads", str(STREAMS + 16),
                         "--server.max-waiting-requests", str(STREAMS * 2))
    asyncio.run(run_storm(daemon, pb))
    assert daemon.stop() == 0
