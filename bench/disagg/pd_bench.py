#!/usr/bin/env python3
"""Disaggregated prefill/decode against one daemon (docs/DISAGGREGATION.md).

Two setups in one run, on one host: P/D (a producer and a consumer daemon with one CPU thread
each, KV pages moved over UCX) and one daemon with two threads. The client plays the router as
vllm-router does: the prefill leg (max_tokens 1, do_remote_decode) to the producer, then the
original request with the producer's kv_transfer_params to the consumer.

Workload: 8 streaming chats decode while long prompts (~2k tokens) arrive one after another.
Reported per setup: p50 / p99 inter-token latency of the 8 decoding streams and the long
prompts' TTFT. Then the transfer alone, per UCX transport (UCX_TLS=tcp and shm,tcp): GB/s and
per-pull latency from the consumer's llmserve_kv_transfer_* metrics over a series of long
prompts (a pull's reads and release on the producer's connection, which the pulls share;
--transfer-only runs just this part).

  python3 bench/disagg/pd_bench.py --json-out /tmp/pd_bench.json
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import threading
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
SECRET = "--kv-transfer.secret=pd-bench-deployment-secret"
BIN = Path(os.environ.get("LLMSERVE_BIN", ROOT / "build" / "llmserve"))
MODEL = Path(os.environ.get("LLMSERVE_TEST_MODEL",
                            ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    def __init__(self, threads, *extra, env=None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(f"/tmp/pd-bench-{self.port}.log", "w")
        args = [str(BIN), "serve", "--model", str(MODEL), "--host", "127.0.0.1",
                "--http-port", str(self.port), "--grpc-port", str(free_port()),
                "--threads", str(threads), "--kv-cache-bytes", "512MiB", *extra]
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                     env={**os.environ, **(env or {})})
        end = time.time() + 180
        while time.time() < end:
            try:
                if requests.get(self.url + "/ready", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"daemon on {self.port} not ready")

    def metrics(self):
        out = {}
        for line in requests.get(self.url + "/metrics", timeout=10).text.splitlines():
            if line.startswith("llmserve_kv_transfer") and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)
        self.log.close()


def long_prompt(i):
    words = " ".join(f"item{i}-{k} is listed in the ledger of the old harbour office" for k in
                     range(190))
    return f"Document {i}: {words}. Summarize the document."


class Legs:
    """One setup's entry point: P/D (two legs) or one daemon (one request)."""

    def __init__(self, single=None, producer=None, consumer=None):
        self.single, self.producer, self.consumer = single, producer, consumer

    def stream(self, messages, max_tokens, on_token):
        body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0,
                "stream": True, "ignore_eos": True}
        target = self.single
        if self.producer is not None:
            pre = {**body, "max_tokens": 1, "stream": False,
                   "kv_transfer_params": {"do_remote_decode": True}}
            r = requests.post(self.producer.url + "/v1/chat/completions", json=pre, timeout=600)
            body["kv_transfer_params"] = r.json().get("kv_transfer_params")
            target = self.consumer
        with requests.post(target.url + "/v1/chat/completions", json=body, stream=True,
                           timeout=600) as r:
            for line in r.iter_lines(decode_unicode=True):
                if line.startswith("data: ") and line != "data: [DONE]":
                    chunk = json.loads(line[6:])
                    if any(c["delta"].get("content") for c in chunk.get("choices", [])):
                        on_token(time.monotonic())


def workload(legs, n_streams, stream_tokens, n_long, long_gap_s):
    itl, ttft = [], []
    lock = threading.Lock()

    def decoder(i):
        stamps = []
        legs.stream([{"role": "user", "content": f"Tell story number {i} about a lighthouse."}],
                    stream_tokens, stamps.append)
        with lock:
            itl.extend(b - a for a, b in zip(stamps[3:], stamps[4:]))  # decoding, not the start

    def long_one(i):
        t0 = time.monotonic()
        first = []
        legs.stream([{"role": "user", "content": long_prompt(i)}], 8,
                    lambda t: first.append(t) if not first else None)
        with lock:
            ttft.append(first[0] - t0 if first else float("nan"))

    threads = [threading.Thread(target=decoder, args=(i,)) for i in range(n_streams)]
    for t in threads:
        t.start()
    time.sleep(2.0)
    longs = []
    for i in range(n_long):
        t = threading.Thread(target=long_one, args=(i,))
        t.start()
        longs.append(t)
        time.sleep(long_gap_s)
    for t in threads + longs:
        t.join()
    q = statistics.quantiles(itl, n=100)
    return {"itl_p50_ms": 1000 * statistics.median(itl), "itl_p99_ms": 1000 * q[98],
            "long_ttft_s": [round(x, 2) for x in ttft], "itl_samples": len(itl)}


def transfer(tls, n):
    env = {"UCX_TLS": tls}
    p = Daemon(1, "--kv-transfer.role=producer", f"--kv-transfer.port={free_port()}", SECRET, env=env)
    c = Daemon(1, "--kv-transfer.role=consumer", "--kv-transfer.port=0", SECRET, env=env)
    try:
        legs = Legs(producer=p, consumer=c)
        for i in range(n):
            legs.stream([{"role": "user", "content": long_prompt(100 + i)}], 1, lambda t: None)
        m = c.metrics()
        pulls = m.get("llmserve_kv_transfer_pulls_total", 0)
        secs = m.get("llmserve_kv_transfer_seconds_sum", 0)
        nbytes = m.get("llmserve_kv_transfer_bytes_total", 0)
        return {"UCX_TLS": tls, "pulls": int(pulls), "bytes_per_pull": nbytes / max(pulls, 1),
                "ms_per_pull": 1000 * secs / max(pulls, 1),
                "GB_per_s": nbytes / secs / 1e9 if secs > 0 else None}
    finally:
        p.stop()
        c.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--streams", type=int, default=8)
    ap.add_argument("--stream-tokens", type=int, default=96)
    ap.add_argument("--long", type=int, default=3)
    ap.add_argument("--long-gap", type=float, default=3.0)
    ap.add_argument("--pulls", type=int, default=6)
    ap.add_argument("--transfer-only", action="store_true",
                    help="only the transfer series per UCX transport, not the P/D workload")
    ap.add_argument("--json-out")
    a = ap.parse_args()
    out = {}
    if a.transfer_only:
        out["transfer"] = [transfer(tls, a.pulls) for tls in ("tcp", "shm,tcp")]
        print(json.dumps(out, indent=2))
        if a.json_out:
            Path(a.json_out).write_text(json.dumps(out, indent=2))
        return
    single = Daemon(2)
    try:
        out["one_daemon_2_threads"] = workload(Legs(single=single), a.streams, a.stream_tokens,
                                               a.long, a.long_gap)
    finally:
        single.stop()
    p = Daemon(1, "--kv-transfer.role=producer", f"--kv-transfer.port={free_port()}", SECRET)
    c = Daemon(1, "--kv-transfer.role=consumer", "--kv-transfer.port=0", SECRET)
    try:
        out["pd_1_plus_1_threads"] = workload(Legs(producer=p, consumer=c), a.streams,
                                              a.stream_tokens, a.long, a.long_gap)
        out["pd_1_plus_1_threads"]["consumer_kv_transfer"] = c.metrics()
    finally:
        p.stop()
        c.stop()
    out["transfer"] = [transfer(tls, a.pulls) for tls in ("tcp", "shm,tcp")]
    print(json.dumps(out, indent=2))
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
