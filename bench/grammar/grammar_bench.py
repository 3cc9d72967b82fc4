#!/usr/bin/env python3
"""Structured outputs cost, against a running daemon (scripts/serve.sh, or --start).

1. Decode step time at N concurrent streams, JSON-schema constrained vs unconstrained, side by
   side in one run (alternating rounds): the median gap between a stream's SSE chunks, and the
   aggregate generation rate. Both modes generate exactly --tokens tokens per stream (the schema
   allows a long array; ignore_eos on the free one).
2. Grammar compile time, cold (a schema never seen) and cached, from the daemon's
   llmserve_grammar_compile_seconds_total, and the TTFT a cold compile adds (max_tokens 1).

Usage: bench/grammar/grammar_bench.py [--url http://127.0.0.1:8000] [--streams 16] [--tokens 96]
       [--rounds 3] [--schema integers|strings] [--start BIN]
"""
import argparse
import json
import statistics
import subprocess
import threading
import time
import uuid

import requests

SCHEMAS = {
    "integers": {"type": "object", "properties": {"values": {
        "type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 99999},
        "minItems": 200, "maxItems": 400}}, "required": ["values"]},
    # Free text inside strings: the most tokens allowed, the costliest masks.
    "strings": {"type": "object", "properties": {"values": {
        "type": "array", "items": {"type": "string"}, "minItems": 200, "maxItems": 400}},
        "required": ["values"]},
}
LONG_SCHEMA = SCHEMAS["integers"]


def metric(url, name):
    for line in requests.get(url + "/metrics", timeout=10).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return 0.0


def stream_one(url, body, out, i):
    t_send = time.perf_counter()
    times, tokens = [], 0
    with requests.post(url + "/v1/completions", json=body, stream=True, timeout=600) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("choices") and chunk["choices"][0].get("text"):
                times.append(time.perf_counter())
                tokens += 1
    out[i] = (t_send, times)


def decode_round(url, streams, tokens, constrained):
    body = {"prompt": "List numbers as JSON:", "max_tokens": tokens, "temperature": 0,
            "stream": True, "ignore_eos": True}
    if constrained:
        body["response_format"] = {"type": "json_schema",
                                   "json_schema": {"name": "long", "schema": LONG_SCHEMA}}
    out = [None] * streams
    start = time.perf_counter()
    threads = [threading.Thread(target=stream_one, args=(url, body, out, i)) for i in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    gaps = []
    total = 0
    for _, times in out:
        total += len(times)
        gaps += [b - a for a, b in zip(times[1:], times[2:])]  # skip the first (prefill) gap
    return statistics.median(gaps), total / wall, total


def compile_costs(url, cold_runs):
    def ttft(schema):
        body = {"prompt": "x", "max_tokens": 1, "temperature": 0,
                "response_format": {"type": "json_schema",
                                    "json_schema": {"name": "c", "schema": schema}}}
        t = time.perf_counter()
        r = requests.post(url + "/v1/completions", json=body, timeout=600)
        r.raise_for_status()
        return time.perf_counter() - t

    def fresh():
        key = "k" + uuid.uuid4().hex[:10]
        return {"type": "object", "properties": {key: {"type": "string", "maxLength": 16},
                                                 "n": {"type": "integer"}}, "required": [key, "n"]}

    cold, warm, compile_s = [], [], []
    for _ in range(cold_runs):
        schema = fresh()
        before = metric(url, "llmserve_grammar_compile_seconds_total")
        cold.append(ttft(schema))
        compile_s.append(metric(url, "llmserve_grammar_compile_seconds_total") - before)
        warm.append(ttft(schema))  # the same schema again: cached
    plain = []
    for _ in range(cold_runs):
        t = time.perf_counter()
        requests.post(url + "/v1/completions", json={"prompt": "x", "max_tokens": 1,
                                                     "temperature": 0}, timeout=600)
        plain.append(time.perf_counter() - t)
    return statistics.median(compile_s), statistics.median(cold), statistics.median(warm), \
        statistics.median(plain)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--streams", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cold-runs", type=int, default=7)
    ap.add_argument("--schema", choices=sorted(SCHEMAS), default="integers",
                    help="the long constrained output: integers or free strings")
    ap.add_argument("--start", help="start this llmserve binary (default model, port 18777)")
    a = ap.parse_args()
    global LONG_SCHEMA
    LONG_SCHEMA = SCHEMAS[a.schema]
    proc = None
    if a.start:
        a.url = "http://127.0.0.1:18777"
        proc = subprocess.Popen([a.start, "serve", "--http-port", "18777", "--grpc-port", "18778"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(600):
            try:
                if requests.get(a.url + "/ready", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            time.sleep(0.2)
    try:
        decode_round(a.url, a.streams, 16, True)  # warm-up, compiles LONG_SCHEMA
        res = {True: [], False: []}
        for _ in range(a.rounds):
            for constrained in (False, True):
                res[constrained].append(decode_round(a.url, a.streams, a.tokens, constrained))
        free_gap = statistics.median(r[0] for r in res[False])
        json_gap = statistics.median(r[0] for r in res[True])
        free_rate = statistics.median(r[1] for r in res[False])
        json_rate = statistics.median(r[1] for r in res[True])
        print(f"decode, {a.streams} streams x {a.tokens} tokens, median of {a.rounds} rounds, "
              f"schema '{a.schema}':")
        print(f"  unconstrained: step {free_gap * 1e3:.2f} ms, {free_rate:.0f} tokens/s")
        print(f"  json schema:   step {json_gap * 1e3:.2f} ms, {json_rate:.0f} tokens/s")
        print(f"  constrained / unconstrained step time: {json_gap / free_gap:.3f}")
        comp, cold, warm, plain = compile_costs(a.url, a.cold_runs)
        print(f"grammar compile (median of {a.cold_runs} new schemas): {comp * 1e3:.1f} ms")
        print(f"request with max_tokens 1: cold schema {cold * 1e3:.1f} ms, cached schema "
              f"{warm * 1e3:.1f} ms, no schema {plain * 1e3:.1f} ms")
        print(f"TTFT added by a cold compile: {(cold - warm) * 1e3:.1f} ms; by a cached grammar: "
              f"{(warm - plain) * 1e3:.1f} ms")
    finally:
        if proc:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
