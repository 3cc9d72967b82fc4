"""Overload: requests at 5x the sustainable rate, over HTTP and gRPC. Asserts behaviour only:
the daemon survives, every request is answered, the excess with the documented rejection
(HTTP 429/503 with Retry-After, gRPC RESOURCE_EXHAUSTED), every admitted request completes
correctly, the KV cache is all free afterwards and memory stays bounded. How fast the excess is
turned away (the rejection p50/p99) is a timing figure: bench/robustness/overload_rejection.py
measures and reports it (bench/RESULTS.md)."""
import asyncio

import pytest

import soak_util
from soak_util import soak_daemon, pb  # noqa: F401 (fixtures)

pytest.importorskip("httpx")
pytest.importorskip("grpc")

import overload_load as load  # noqa: E402 (needs grpc)

DURATION_S = 300 if soak_util.LONG else 12


def test_overload(soak_daemon, pb):
    daemon = soak_daemon(*load.DAEMON_ARGS)
    r = asyncio.run(load.overload_round(daemon, pb, DURATION_S))
    assert daemon.proc.poll() is None, "the daemon died under overload"

    # Calibration (a full batch, nothing waiting) completes.
    assert all(o[0] == 200 for o in r.calibration), [o[:2] for o in r.calibration]
    # Every HTTP request is answered: 200, or the documented rejection with Retry-After.
    ok = [o for o in r.http if o[0] == 200]
    rejected = [o for o in r.http if o[0] in (429, 503)]
    other = [o for o in r.http if o[0] not in (200, 429, 503)]
    assert not other, [(o[0], o[2] if isinstance(o[2], str) else o[2].body[:200])
                       for o in other[:5]]
    assert rejected, "no request was rejected at 5x the sustainable rate"
    assert all("retry-after" in o[2].headers for o in rejected)
    for o in rejected:
        err = o[2].json()["error"]
        assert err["message"] and err["type"], err
    # Admitted ones complete correctly: max_tokens tokens, ignore_eos, so "length".
    for o in ok:
        body = o[2].json()
        assert body["choices"][0]["finish_reason"] == "length", body
        assert body["usage"]["completion_tokens"] == load.BODY["max_tokens"], body
    # gRPC: OK with the tokens, or RESOURCE_EXHAUSTED; nothing else.
    g_ok = [o for o in r.grpc if o[0] == "OK"]
    g_rej = [o for o in r.grpc if o[0] == "RESOURCE_EXHAUSTED"]
    g_other = [o for o in r.grpc if o[0] not in ("OK", "RESOURCE_EXHAUSTED")]
    assert not g_other, g_other[:5]
    assert g_rej, "no gRPC request was rejected at 5x the sustainable rate"
    for o in g_ok:
        assert o[2].choices[0].finish_reason == "length", o[2]
        assert o[2].usage.completion_tokens == load.BODY["max_tokens"], o[2]
    print(f"overload: sustainable {r.rate:.1f} req/s, offered {r.offered:.1f} req/s for "
          f"{DURATION_S} s: HTTP {len(ok)} admitted, {len(rejected)} rejected; gRPC {len(g_ok)} "
          f"admitted, {len(g_rej)} RESOURCE_EXHAUSTED; RSS {r.rss_before >> 20} -> "
          f"{r.rss_after >> 20} MiB")
    m = r.metrics_after
    assert m.get("llmserve_kv_cache_blocks_free") == m.get("llmserve_kv_cache_blocks_total")
    assert r.rss_after < r.rss_before * 1.5
