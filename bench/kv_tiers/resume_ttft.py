#!/usr/bin/env python3
"""Time to first token of a long conversation resumed from the tiers below the pool (issue 54).

Starts `llmserve serve` on a GGUF, sends turn 1 of a conversation (N prompt tokens), then other
traffic that evicts it from the page pool, then turn 2 (turn 1 + a few new tokens): its TTFT is
the resume after eviction. Restarts the daemon on the same kv_offload.disk_path and sends turn 2
again (with other new tokens): the resume after a restart. The baseline is the same turn 2 on a
daemon without tiers (a full prefill; --no-baseline uses turn 1's cold prefill in the tiered
daemon instead, which saves one long prefill). TTFT = a non-streamed completion with max_tokens 1
(the prefill plus one sampled token). Prompts are random token ids (the weights are random too),
so the numbers measure the KV path, not the text. --host-bytes adds the host-memory tier above
disk (its pages go to disk at shutdown, so the restart reads them from there).

--llama-server PATH runs the same three requests on llama.cpp's server on --llama-model (default
--model): its prompt cache in RAM (`--cache-ram`) serves the resume after eviction, and slot
save / restore (`--slot-save-path`, POST /slots/0?action=save|restore) the resume after a
restart, whose TTFT is the restore plus the completion.

    python3 bench/kv_tiers/resume_ttft.py --model bench/real_sizes/out/llama-3.2-1b-keep-f16.gguf \\
        --tokens 2048 --quantize q4_0 --md /tmp/kv_tiers.md
"""
import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    def __init__(self, a, tiers, log):
        self.port = free_port()
        cmd = [str(a.bin), "serve", "--model", a.model, "--threads", str(a.threads),
               "--http-port", str(self.port), "--grpc-port", "0",
               "--kv-cache-bytes", a.kv_cache_bytes, "--model.max-model-len", str(a.tokens + 256)]
        if a.quantize:
            cmd += ["--quantize", a.quantize]
        if tiers:
            cmd += ["--kv-offload.disk-bytes", a.disk_bytes, "--kv-offload.disk-path", a.disk_path]
            if a.host_bytes:
                cmd += ["--kv-offload.host-bytes", a.host_bytes]
        self.log = open(log, "ab")
        self.p = subprocess.Popen(["nice", "-n", "5"] + cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 900
        while time.time() < deadline:
            if self.p.poll() is not None:
                sys.exit(f"llmserve exited ({self.p.returncode}); see {log}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/ready", timeout=2)
                return
            except Exception:
                time.sleep(1)
        sys.exit("llmserve did not become ready")

    def complete(self, prompt):
        body = json.dumps({"prompt": prompt, "max_tokens": 1, "temperature": 0}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        t0 = time.perf_counter()
        with urllib.request.urlopen(req, timeout=3600) as r:
            out = json.load(r)
        dt = time.perf_counter() - t0
        return dt, out["usage"].get("prompt_tokens_details", {}) or {}, out["choices"][0]["text"]

    def metric(self, name):
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics").read().decode()
        return sum(float(l.split()[-1]) for l in text.splitlines() if l.startswith(name))

    def stop(self):
        self.p.terminate()
        self.p.wait(timeout=120)
        self.log.close()


class LlamaServer:
    """llama.cpp's llama-server with its prompt cache in RAM and slot files."""

    def __init__(self, a, log, slot_dir):
        self.port = free_port()
        cmd = [a.llama_server, "-m", a.llama_model or a.model, "--port", str(self.port),
               "--host", "127.0.0.1", "-t", str(a.threads), "-c", str(a.tokens + 256), "-np", "1",
               "--cache-ram", str(a.llama_cache_ram_mib), "--slot-save-path", slot_dir]
        self.log = open(log, "ab")
        self.p = subprocess.Popen(["nice", "-n", "5"] + cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 900
        while time.time() < deadline:
            if self.p.poll() is not None:
                sys.exit(f"llama-server exited ({self.p.returncode}); see {log}")
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2).status == 200:
                    return
            except Exception:
                time.sleep(1)
        sys.exit("llama-server did not become ready")

    def post(self, path, body):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=7200) as r:
            return json.load(r)

    def complete(self, prompt):
        t0 = time.perf_counter()
        out = self.post("/completion", {"prompt": prompt, "n_predict": 1, "temperature": 0,
                                        "cache_prompt": True})
        return time.perf_counter() - t0, out.get("timings", {}).get("prompt_n", -1)

    def stop(self):
        self.p.terminate()
        self.p.wait(timeout=120)
        self.log.close()


def run_llama(a, tmp, turn1, other, turn2, turn2b):
    rows = []
    slot_dir = str(tmp / "slots")
    os.makedirs(slot_dir, exist_ok=True)
    log = tmp / "llama-server.log"
    ls = LlamaServer(a, log, slot_dir)
    ls.complete(turn1[:64][::-1])  # warm-up
    t1, n1 = ls.complete(turn1)
    rows.append(("llama.cpp: turn 1 (cold prefill)", t1, n1))
    ls.complete(other)  # the slot now holds other traffic; turn 1 is in the RAM prompt cache
    ev, n_ev = ls.complete(turn2)
    rows.append(("llama.cpp: turn 2 after other traffic (prompt cache in RAM, --cache-ram)", ev, n_ev))
    ls.post("/slots/0?action=save", {"filename": "conv.bin"})
    ls.stop()
    ls = LlamaServer(a, log, slot_dir)
    t0 = time.perf_counter()
    ls.post("/slots/0?action=restore", {"filename": "conv.bin"})
    rs, n_rs = ls.complete(turn2b)
    rows.append(("llama.cpp: turn 2' after a restart (slot restore + completion)",
                 time.perf_counter() - t0, n_rs))
    ls.stop()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--bin", default=str(REPO / "build" / "llmserve"))
    ap.add_argument("--tokens", type=int, default=2048, help="turn 1's prompt tokens")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quantize", default="")
    ap.add_argument("--kv-cache-bytes", default="", help="default: room for 1.25 x --tokens")
    ap.add_argument("--kv-bytes-per-token", type=int, default=32768,
                    help="Llama-3.2-1B f16: 2 x 16 layers x 8 kv heads x 64 x 2 bytes")
    ap.add_argument("--disk-bytes", default="8GiB")
    ap.add_argument("--host-bytes", default="", help="host-memory tier above disk (default off)")
    ap.add_argument("--other-tokens", type=int, default=0,
                    help="tokens of the traffic that evicts turn 1 (default --tokens: all of it)")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip the daemon without tiers; compare with turn 1's cold prefill")
    ap.add_argument("--llama-server", default="", help="llama.cpp's llama-server binary")
    ap.add_argument("--llama-model", default="", help="GGUF for llama-server (default --model)")
    ap.add_argument("--llama-cache-ram-mib", type=int, default=8192)
    ap.add_argument("--disk-path", default="")
    ap.add_argument("--vocab", type=int, default=49152)
    ap.add_argument("--md", default="")
    a = ap.parse_args()
    if not a.kv_cache_bytes:
        a.kv_cache_bytes = str(int(a.tokens * 1.25 + 256) * a.kv_bytes_per_token)
    tmp = Path(tempfile.mkdtemp(prefix="kv_tiers_bench_"))
    a.disk_path = a.disk_path or str(tmp / "kv")
    log = tmp / "llmserve.log"
    rng = random.Random(54)
    turn1 = [rng.randrange(1000, a.vocab) for _ in range(a.tokens)]
    other = [rng.randrange(1000, a.vocab) for _ in range(a.other_tokens or a.tokens)]
    turn2 = turn1 + [rng.randrange(1000, a.vocab) for _ in range(32)]
    turn2b = turn1 + [rng.randrange(1000, a.vocab) for _ in range(32)]
    rows = []

    base_text = None
    if not a.no_baseline:
        d = Daemon(a, tiers=False, log=log)
        d.complete(turn2[:64])  # warm-up
        full, _, base_text = d.complete(turn2)
        rows.append(("full prefill (no tiers)", full, 0))
        d.stop()

    d = Daemon(a, tiers=True, log=log)
    d.complete(turn1[:64][::-1])  # warm-up, shares nothing
    t1, _, _ = d.complete(turn1)
    rows.append(("turn 1 with tiers (cold, pages written behind)", t1, 0))
    if a.no_baseline:
        full = t1
    d.complete(other)  # evicts turn 1 from the pool
    time.sleep(2)
    pool = {m: d.metric(m) for m in ("llmserve_kv_cache_blocks_total", "llmserve_kv_cache_blocks_free",
                                      "llmserve_prefix_cache_blocks", "llmserve_kv_tier_pages",
                                      "llmserve_kv_tier_evicted_pages_total")}
    print("before turn 2:", ", ".join(f"{k} {v:g}" for k, v in pool.items()), flush=True)
    before = d.metric("llmserve_kv_tier_hits_total")
    hits_before = d.metric("llmserve_prefix_cache_hits_total")
    ev, details, text = d.complete(turn2)
    print(f"turn 2: {ev:.2f} s, cached_tokens {details.get('cached_tokens')}, tier pages restored "
          f"{d.metric('llmserve_kv_tier_hits_total') - before:g}, prefix-cache hit tokens "
          f"{d.metric('llmserve_prefix_cache_hits_total') - hits_before:g}", flush=True)
    assert base_text is None or text == base_text, "the resumed turn must give the full prefill's token"
    rows.append(("turn 2 after eviction (restored from disk)", ev,
                 d.metric("llmserve_kv_tier_hits_total") - before))
    d.stop()

    d = Daemon(a, tiers=True, log=log)
    loaded = d.metric("llmserve_kv_tier_loaded_pages_total")
    rs, details, _ = d.complete(turn2b)
    rows.append(("turn 2' after a daemon restart (restored from disk)", rs,
                 d.metric("llmserve_kv_tier_hits_total")))
    d.stop()
    if a.llama_server:
        rows += run_llama(a, tmp, turn1, other, turn2, turn2b)

    lines = [f"Model {os.path.basename(a.model)}{' (quantize ' + a.quantize + ')' if a.quantize else ''}, "
             f"{a.threads} threads, turn 1 = {a.tokens} tokens, turn 2 = turn 1 + 32, other traffic "
             f"{len(other)} tokens; "
             f"KV pool {a.kv_cache_bytes} bytes; host tier {a.host_bytes or 'off'}, disk tier "
             f"{a.disk_bytes}; {int(loaded)} pages indexed at the restart; full prefill = "
             f"{'turn 1 cold in the tiered daemon' if a.no_baseline else 'turn 2 without tiers'}.", "",
             "| run | TTFT (s) | pages restored (llama.cpp: prompt tokens evaluated) | vs full prefill |",
             "|---|---|---|---|"]
    for name, t, hits in rows:
        lines.append(f"| {name} | {t:.3f} | {int(hits)} | {full / t:.1f}x |")
    out = "\n".join(lines)
    print(out)
    if a.md:
        Path(a.md).write_text(out + "\n")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
