#!/usr/bin/env python3
"""Memory and start-up of llmserve on a GGUF (issue 36): RSS, peak RSS, start-up time, repacking.

For each --model file and each --variant it starts `llmserve serve` (or `llmserve generate`,
--mode generate) under `nice -n 19`, samples /proc/PID/status (VmRSS, VmHWM, RssAnon, RssFile)
every 20 ms, waits for GET /ready, reads the memory once the daemon is ready and again after one
short completion, stops it (SIGTERM), and collects the daemon's start-up log lines:

  start-up: model mapped in X s (N tensors, G GiB of weights; tokenizer T s)
  start-up: CPU weights ready in X s: repacked N matrices (A GiB -> B GiB) in Y s (per type);
            M matrices (C GiB) read per row from the mapping; released R GiB of mapped source pages;
            RSS ..., peak ...
  start-up: engine ready in X s; RSS ... (file-mapped ...), peak ...

(a binary without them still gets the wall-clock time to /ready and the /proc figures). It prints
a markdown table with the commands, and writes the raw samples to --json-out. `llmserve generate`
(--mode generate) loads the model itself, not through the engine: it logs only the CPU weights
line, and its RSS figures are read when that line appears and at exit.

Variants: NAME[:KEY=VALUE,...]; KEY `bin` picks the llmserve binary, any other KEY is set in the
daemon's environment. The defaults, `packed-copy-only` and `source-kept:LLMSERVE_CPU_KEEP_SOURCE=1`,
show the weights held once (the mapped pages of each repacked matrix dropped once its packed copy
exists) against held twice (the mapping stays resident beside the packed copy).

  .venv-bench/bin/python bench/real_sizes/memory_startup.py \\
      --model bench/real_sizes/out/llama-3.1-8b-body-Q4_K_M.gguf \\
      --model bench/real_sizes/out/llama-3.1-8b-body-Q4_0.gguf --md /tmp/mem8b.md

The file is read once before the first run (warm page cache), so start-up times are those of a
file the OS has cached (a second start of the daemon); the first start after boot reads it from
disk on top. The KV cache (engine.kv_cache_bytes, --kv-cache-bytes here, 1 GiB by default as in
the daemon) is allocated and touched at start-up and is part of every RSS figure.
"""
import argparse
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

LOG_MAPPED = re.compile(r"start-up: model mapped in ([\d.]+) s \((\d+) tensors, ([\d.]+) GiB of weights; "
                        r"tokenizer ([\d.]+) s\)")
LOG_WEIGHTS = re.compile(r"start-up: CPU weights ready in ([\d.]+) s: repacked (\d+) matrices \(([\d.]+) GiB -> "
                         r"([\d.]+) GiB\) in ([\d.]+) s(?: \((.*?)\))?; (\d+) matrices \(([\d.]+) GiB\) read per row "
                         r"from the mapping; released ([\d.]+) GiB of mapped source pages")
LOG_READY = re.compile(r"start-up: engine ready in ([\d.]+) s")
STATUS_KEYS = ("VmRSS", "VmHWM", "RssAnon", "RssFile")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def show(cmd):
    def rel(c):
        c = str(c)
        return c[len(str(REPO)) + 1:] if c.startswith(str(REPO) + "/") else c
    return " ".join(shlex.quote(rel(c)) for c in cmd)


def proc_status(pid):
    """VmRSS, VmHWM, RssAnon, RssFile of pid in MiB (None once it is gone)."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in STATUS_KEYS:
                    out[k] = int(v.split()[0]) / 1024
    except (OSError, ValueError):
        return None
    return out if len(out) == len(STATUS_KEYS) else None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(url, body=None, timeout=5.0):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.read()


def parse_variant(spec, default_bin):
    name, _, rest = spec.partition(":")
    v = {"name": name, "bin": default_bin, "env": {}}
    for kv in filter(None, rest.split(",")):
        k, _, val = kv.partition("=")
        if k == "bin":
            v["bin"] = val
        else:
            v["env"][k] = val
    return v


def warm(path):
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        while f.read(64 << 20):
            pass
    return time.perf_counter() - t0


def parse_log(text):
    r = {}
    if m := LOG_MAPPED.search(text):
        r.update(map_s=float(m.group(1)), tensors=int(m.group(2)), weights_gib=float(m.group(3)),
                 tokenizer_s=float(m.group(4)))
    if m := LOG_WEIGHTS.search(text):
        r.update(weights_s=float(m.group(1)), packed_n=int(m.group(2)), packed_src_gib=float(m.group(3)),
                 packed_gib=float(m.group(4)), repack_s=float(m.group(5)), repack_by_type=m.group(6) or "",
                 per_row_n=int(m.group(7)), per_row_gib=float(m.group(8)), released_gib=float(m.group(9)))
    if m := LOG_READY.search(text):
        r["ready_s"] = float(m.group(1))
    return r


class Sampler:
    """Polls /proc/PID/status; keeps the last reading and the largest VmRSS."""

    def __init__(self, pid):
        self.pid, self.last, self.max_rss, self.n = pid, None, 0.0, 0

    def poll(self):
        s = proc_status(self.pid)
        if s:
            self.last = s
            self.max_rss = max(self.max_rss, s["VmRSS"])
            self.n += 1
        return s


def run_serve(a, model, variant):
    port = free_port()
    cmd = [variant["bin"], "serve", "--model", model, "--threads", a.threads, "--http-port", port,
           "--grpc-port", 0, "--kv-cache-bytes", a.kv_cache_bytes] + a.llmserve_arg
    full = (["nice", "-n", str(a.nice)] if a.nice is not None else []) + [str(c) for c in cmd]
    env = dict(os.environ, **variant["env"])
    errf = tempfile.TemporaryFile(mode="w+")
    t0 = time.perf_counter()
    p = subprocess.Popen(full, env=env, stdout=errf, stderr=subprocess.STDOUT)  # the log goes to stdout
    smp = Sampler(p.pid)
    ready_wall = None
    base = f"http://127.0.0.1:{port}"
    try:
        next_probe = 0.0
        while time.perf_counter() - t0 < a.timeout:
            if p.poll() is not None:
                errf.seek(0)
                raise RuntimeError(f"llmserve serve exited {p.returncode}: {errf.read()[-3000:]}")
            smp.poll()
            now = time.perf_counter()
            if now >= next_probe:
                next_probe = now + 0.1
                try:
                    if http(base + "/ready", timeout=1.0)[0] == 200:
                        ready_wall = time.perf_counter() - t0
                        break
                except (urllib.error.URLError, OSError):
                    pass
            time.sleep(0.02)
        if ready_wall is None:
            raise RuntimeError(f"llmserve serve not ready after {a.timeout} s")
        time.sleep(a.settle)
        at_ready = smp.poll() or smp.last
        after = None
        if a.request_tokens > 0:
            body = {"prompt": a.request_prompt, "max_tokens": a.request_tokens, "ignore_eos": True,
                    "temperature": 0}
            t1 = time.perf_counter()
            http(base + "/v1/completions", body, timeout=a.timeout)
            request_s = time.perf_counter() - t1
            time.sleep(a.settle)
            after = smp.poll() or smp.last
        else:
            request_s = None
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        errf.seek(0)
        text = errf.read()
        errf.close()
    return {"cmd": show(full), "env": variant["env"], "ready_wall_s": round(ready_wall, 3), "at_ready": at_ready,
            "after_request": after, "request_s": request_s, "max_rss": smp.max_rss, "samples": smp.n,
            "log": parse_log(text), "log_lines": [l for l in text.splitlines() if "start-up:" in l]}


def run_generate(a, model, variant):
    cmd = [variant["bin"], "generate", "--model", model, "--threads", a.threads, "--kv-cache-bytes",
           a.kv_cache_bytes, "--prompt", a.request_prompt, "--max-tokens", max(1, a.request_tokens),
           "--ignore-eos"] + a.llmserve_arg
    full = (["nice", "-n", str(a.nice)] if a.nice is not None else []) + [str(c) for c in cmd]
    env = dict(os.environ, **variant["env"])
    errf = tempfile.TemporaryFile(mode="w+")
    t0 = time.perf_counter()
    p = subprocess.Popen(full, env=env, stdout=subprocess.DEVNULL, stderr=errf)  # generate logs to stderr
    smp = Sampler(p.pid)
    at_ready, pos = None, 0
    while p.poll() is None:
        smp.poll()
        if at_ready is None:
            errf.seek(pos)
            chunk = errf.read()
            if "start-up: engine ready" in chunk or "start-up: CPU weights ready" in chunk:
                at_ready = smp.last
            errf.seek(0, 2)
        time.sleep(0.02)
    wall = time.perf_counter() - t0
    errf.seek(0)
    text = errf.read()
    errf.close()
    if p.returncode != 0:
        raise RuntimeError(f"llmserve generate exited {p.returncode}: {text[-3000:]}")
    return {"cmd": show(full), "env": variant["env"], "ready_wall_s": None, "wall_s": round(wall, 3),
            "at_ready": at_ready, "after_request": smp.last, "request_s": None, "max_rss": smp.max_rss,
            "samples": smp.n, "log": parse_log(text),
            "log_lines": [l for l in text.splitlines() if "start-up:" in l]}


def f(x, nd=0, unit=""):
    return "-" if x is None else f"{x:.{nd}f}{unit}"


def report(a, rows):
    out = [f"`llmserve {a.mode}`, {a.threads} threads, KV cache {a.kv_cache_bytes} (allocated and touched at "
           f"start-up: inside every RSS), warm page cache; MiB from /proc/PID/status (VmRSS = RssAnon + RssFile + "
           f"shmem; VmHWM = peak VmRSS).", ""]
    head = ["file", "GiB", "variant", "map s", "repack s (by type)", "weights s", "ready s (log / wall)",
            "released GiB", "RSS at ready (anon + file)", "peak (VmHWM)", "RSS after a request"]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    for r in rows:
        lg, rd, af = r["log"], r["at_ready"] or {}, r["after_request"] or {}
        repack = f(lg.get("repack_s"), 2)
        if lg.get("repack_by_type"):
            repack += f" ({lg['repack_by_type']})"
        row = [Path(r["model"]).name, f"{r['file_gib']:.2f}", r["variant"], f(lg.get("map_s"), 3), repack,
               f(lg.get("weights_s"), 2), f"{f(lg.get('ready_s'), 2)} / {f(r.get('ready_wall_s') or r.get('wall_s'), 2)}",
               f(lg.get("released_gib"), 2),
               f"{f(rd.get('VmRSS'))} ({f(rd.get('RssAnon'))} + {f(rd.get('RssFile'))})" if rd else "-",
               f(max(rd.get("VmHWM", 0), af.get("VmHWM", 0)) or None),
               f"{f(af.get('VmRSS'))} ({f(af.get('RssAnon'))} + {f(af.get('RssFile'))})" if af else "-"]
        out.append("| " + " | ".join(row) + " |")
    out += ["", "Commands:", "", f"    {show([sys.executable, Path(__file__)] + sys.argv[1:])}"]
    seen = set()
    for r in rows:
        c = " ".join(f"{k}={v}" for k, v in r["env"].items()) + (" " if r["env"] else "") + r["cmd"]
        if c not in seen:
            seen.add(c)
            out.append(f"    # {r['variant']}: {c}")
    if a.request_tokens > 0:
        out.append(f"    # then one POST /v1/completions {{prompt: {a.request_prompt!r}, max_tokens: {a.request_tokens}, "
                   f"ignore_eos}}; memory read {a.settle} s after /ready and after the response")
    out += ["", "Start-up log lines:", ""]
    for r in rows:
        out.append(f"- {Path(r['model']).name}, {r['variant']}:")
        for line in r["log_lines"]:
            out.append(f"  `{line.split('start-up: ', 1)[-1]}`")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--model", action="append", required=True, help="GGUF file (repeat for more)")
    ap.add_argument("--variant", action="append", help="NAME[:bin=PATH,ENV=VALUE,...] (repeat); default: "
                    "packed-copy-only and source-kept:LLMSERVE_CPU_KEEP_SOURCE=1")
    ap.add_argument("--llmserve", default=str(REPO / "build" / "llmserve"))
    ap.add_argument("--mode", choices=["serve", "generate"], default="serve")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--kv-cache-bytes", default="1GiB", help="engine.kv_cache_bytes (the daemon's default 1GiB)")
    ap.add_argument("--request-tokens", type=int, default=8, help="tokens of the one completion after /ready "
                    "(0: none)")
    ap.add_argument("--request-prompt", default="The history of computing is a story of layers.")
    ap.add_argument("--settle", type=float, default=1.0, help="seconds to wait before reading the memory")
    ap.add_argument("--repeat", type=int, default=1, help="runs per file and variant")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--llmserve-arg", action="append", default=[], help="extra llmserve flag")
    ap.add_argument("--nice", type=int, default=19)
    ap.add_argument("--no-nice", action="store_true")
    ap.add_argument("--no-warm", action="store_true", help="do not read the file before the first run")
    ap.add_argument("--json-out")
    ap.add_argument("--md")
    a = ap.parse_args()
    if a.no_nice:
        a.nice = None
    variants = [parse_variant(v, a.llmserve) for v in
                (a.variant or ["packed-copy-only", "source-kept:LLMSERVE_CPU_KEEP_SOURCE=1"])]
    rows = []
    for model in a.model:
        model = str(Path(model).resolve())
        if not a.no_warm:
            log(f"reading {model} once ({warm(model):.1f} s)")
        for i in range(a.repeat):
            for v in variants:
                log(f"{Path(model).name} [{v['name']}] run {i + 1}/{a.repeat}")
                r = (run_serve if a.mode == "serve" else run_generate)(a, model, v)
                r.update(model=model, variant=v["name"], file_gib=os.path.getsize(model) / 2**30)
                rows.append(r)
                rd = r["at_ready"] or {}
                log(f"  ready {r.get('ready_wall_s') or r.get('wall_s')} s; RSS {f(rd.get('VmRSS'))} MiB "
                    f"(anon {f(rd.get('RssAnon'))}, file {f(rd.get('RssFile'))}), peak {f(rd.get('VmHWM'))} MiB; "
                    f"{r['log']}")
                if a.json_out:
                    Path(a.json_out).write_text(json.dumps(rows, indent=1))
    text = report(a, rows)
    print(text)
    if a.md:
        Path(a.md).write_text(text + "\n")


if __name__ == "__main__":
    main()
