"""How fast an overloaded daemon turns the excess away (issue 51: this was a p99 bar inside
tests/soak/test_soak_overload.py; a timing figure belongs here, reported, not asserted). The
soak test's load (tests/soak/overload_load.py): 5x the sustainable rate for DURATION seconds,
every fourth request over gRPC; prints the latency of the rejected requests (HTTP 429/503,
gRPC RESOURCE_EXHAUSTED) and of the admitted ones, per round, and the JSON of every round.
Usage: LLMSERVE_TEST_MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf .venv-test/bin/python \\
           bench/robustness/overload_rejection.py [--duration 12] [--rounds 3]"""
import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "soak"))
import overload_load as load  # noqa: E402
import soak_util  # noqa: E402


def summary(r):
    rej = [o[1] for o in r.http if o[0] in (429, 503)]
    ok = [o[1] for o in r.http if o[0] == 200]
    g_rej = [o[1] for o in r.grpc if o[0] == "RESOURCE_EXHAUSTED"]
    return {
        "sustainable_req_s": round(r.rate, 2), "offered_req_s": round(r.offered, 2),
        "http_admitted": len(ok), "http_rejected": len(rej),
        "http_reject_p50_ms": round(load.percentile_ms(rej, 0.5), 2),
        "http_reject_p99_ms": round(load.percentile_ms(rej, 0.99), 2),
        "http_admitted_p50_ms": round(load.percentile_ms(ok, 0.5), 1),
        "grpc_rejected": len(g_rej),
        "grpc_reject_p50_ms": round(load.percentile_ms(g_rej, 0.5), 2),
        "grpc_reject_p99_ms": round(load.percentile_ms(g_rej, 0.99), 2),
        "rss_mib": [r.rss_before >> 20, r.rss_after >> 20],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=12.0, help="seconds of overload per round")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    why = soak_util.serve_available()
    if why:
        sys.exit(why)
    pb = soak_util.grpc_modules(Path(tempfile.mkdtemp(prefix="overload_pb_")))
    d = soak_util.Daemon(load.DAEMON_ARGS).wait_ready()
    rounds = []
    try:
        for i in range(a.rounds):
            s = summary(asyncio.run(load.overload_round(d, pb, a.duration)))
            rounds.append(s)
            print(f"round {i + 1}: sustainable {s['sustainable_req_s']} req/s, offered "
                  f"{s['offered_req_s']} req/s; HTTP {s['http_admitted']} admitted, "
                  f"{s['http_rejected']} rejected, reject p50 {s['http_reject_p50_ms']} ms "
                  f"p99 {s['http_reject_p99_ms']} ms; gRPC {s['grpc_rejected']} "
                  f"RESOURCE_EXHAUSTED, p50 {s['grpc_reject_p50_ms']} ms p99 "
                  f"{s['grpc_reject_p99_ms']} ms", flush=True)
    finally:
        d.stop(signal.SIGTERM)
    print(json.dumps({"cpus": os.cpu_count(), "duration_s": a.duration, "rounds": rounds}))


if __name__ == "__main__":
    main()
