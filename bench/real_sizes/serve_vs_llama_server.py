#!/usr/bin/env python3
"""Serving benchmark, llmserve against llama.cpp's llama-server on the same GGUF (issue 36).

Starts `llmserve serve` and `llama-server -np 8` in turn on one file (the same threads, the same
context budget: --ctx tokens of KV cache in all, --ctx / 8 per sequence), each under `nice -n 19`,
and drives both with the same client: llmserve's own serving benchmark (`llmserve bench`, the
bench/serve client), which speaks OpenAI /v1/completions with SSE streaming to either server.
Every request is the same for both: --input-len random token ids (one seed; no shared prefix, so
no prompt cache helps either), --output-len tokens with EOS ignored (`ignore_eos`, which both
servers take), greedy. For each concurrency (default 1 and 8) it runs --warmup requests, then the
measured ones, and reports output throughput (tok/s), TTFT, TPOT and ITL medians and p99.

  .venv-bench/bin/python bench/real_sizes/serve_vs_llama_server.py \\
      --model bench/real_sizes/out/smollm2-1.7b-Q4_K_M.gguf --md /tmp/serve.md

Rounds alternate the servers (llmserve, llama-server, llmserve, ...; --rounds) so that a load change
on the shared machine hits both. The raw `llmserve bench --json-out` reports go to --out-dir.
"""
import argparse
import json
import os
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def show(cmd):
    def rel(c):
        c = str(c)
        return c[len(str(REPO)) + 1:] if c.startswith(str(REPO) + "/") else c
    return " ".join(shlex.quote(rel(c)) for c in cmd)


def niced(cmd, nice):
    return (["nice", "-n", str(nice)] if nice is not None else []) + [str(c) for c in cmd]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kv_bytes_per_token(path):
    """f16 K and V bytes of one token (both servers' default KV type), from the GGUF's metadata."""
    import gguf
    r = gguf.GGUFReader(str(path))
    arch = r.fields["general.architecture"].contents()

    def val(key):
        return int(r.fields[f"{arch}.{key}"].contents())
    layers, heads, hidden = val("block_count"), val("attention.head_count"), val("embedding_length")
    kv_heads = val("attention.head_count_kv") if f"{arch}.attention.head_count_kv" in r.fields else heads
    return 2 * layers * kv_heads * (hidden // heads) * 2


def wait_ready(url, proc, timeout, errf):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if proc.poll() is not None:
            errf.seek(0)
            raise RuntimeError(f"server exited {proc.returncode}: {errf.read()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return time.perf_counter() - t0
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    raise RuntimeError(f"{url} not ready after {timeout} s")


class Server:
    def __init__(self, name, cmd, ready_path, port, env=None):
        self.name, self.cmd, self.ready_path, self.port, self.env = name, cmd, ready_path, port, env

    def __enter__(self):
        self.errf = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(self.cmd, stdout=self.errf, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, **(self.env or {})))
        self.ready_s = wait_ready(f"http://127.0.0.1:{self.port}{self.ready_path}", self.proc, 1800, self.errf)
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.errf.seek(0)
        self.log_tail = self.errf.read()[-4000:]
        self.errf.close()


def llmserve_server(a, port, kv_bytes):
    cmd = niced([a.llmserve, "serve", "--model", a.model, "--threads", a.threads, "--http-port", port,
                 "--grpc-port", 0, "--kv-cache-bytes", kv_bytes, "--max-num-seqs", a.parallel,
                 "--max-model-len", a.ctx // a.parallel] + a.llmserve_arg, a.nice)
    return Server("llmserve", cmd, "/ready", port)


def llama_server(a, port):
    cmd = niced([Path(a.llama_bin) / "llama-server", "-m", a.model, "-np", a.parallel, "-t", a.threads,
                 "-c", a.ctx, "--host", "127.0.0.1", "--port", port] + a.llama_arg, a.nice)
    return Server("llama-server", cmd, "/health", port)


def bench(a, port, concurrency, n, tag):
    out = Path(a.out_dir) / f"serve-{tag}-c{concurrency}.json"
    cmd = [a.llmserve, "bench", "--url", f"http://127.0.0.1:{port}/v1/completions", "--num-requests", n,
           "--max-concurrency", concurrency, "--input-len", a.input_len, "--output-len", a.output_len,
           "--token-id-range", a.token_id_range, "--seed", a.seed, "--warmup", a.warmup * concurrency,
           "--timeout", a.request_timeout, "--json-out", out, "--no-progress"]
    p = subprocess.run([str(c) for c in cmd], text=True, capture_output=True)
    if p.returncode != 0 or not out.exists():
        raise RuntimeError(f"llmserve bench failed ({p.returncode}): {p.stderr[-3000:]}{p.stdout[-2000:]}")
    j = json.loads(out.read_text())
    if j.get("failed"):
        log(f"  {j['failed']} failed requests: {j.get('errors')}")
    return j, show(cmd[:-2] + ["<json>", "--no-progress"])


def fmt_ms(d, key):
    v = d.get(key)
    return "-" if v is None else f"{v:.0f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--model", default=str(HERE / "out" / "smollm2-1.7b-Q4_K_M.gguf"))
    ap.add_argument("--concurrency", default="1,8", help="comma list")
    ap.add_argument("--num-requests", default="6,16", help="measured requests per concurrency (comma list)")
    ap.add_argument("--warmup", type=int, default=1, help="warm-up requests per unit of concurrency")
    ap.add_argument("--rounds", type=int, default=1, help="alternating rounds of both servers")
    ap.add_argument("--input-len", type=int, default=500)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--token-id-range", default="1000:10000")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--parallel", type=int, default=8, help="llama-server -np; llmserve --max-num-seqs")
    ap.add_argument("--ctx", type=int, default=8192, help="KV cache tokens in all (llama-server -c; llmserve "
                    "--kv-cache-bytes of as many f16 tokens), --ctx / --parallel per sequence")
    ap.add_argument("--request-timeout", type=float, default=1800)
    ap.add_argument("--llmserve", default=str(REPO / "build" / "llmserve"))
    ap.add_argument("--llmserve-arg", action="append", default=[], help="extra llmserve serve flag")
    ap.add_argument("--llama-arg", action="append", default=[], help="extra llama-server flag")
    ap.add_argument("--llama-bin", help="dir with llama-server (default: scripts/build-llama-cpp.sh)")
    ap.add_argument("--servers", default="llmserve,llama-server")
    ap.add_argument("--out-dir", default=str(HERE / "out"))
    ap.add_argument("--md")
    ap.add_argument("--nice", type=int, default=19)
    ap.add_argument("--no-nice", action="store_true")
    a = ap.parse_args()
    if a.no_nice:
        a.nice = None
    a.model = str(Path(a.model).resolve())
    conc = [int(x) for x in a.concurrency.split(",")]
    nreq = [int(x) for x in a.num_requests.split(",")]
    nreq += [nreq[-1]] * (len(conc) - len(nreq))
    Path(a.out_dir).mkdir(parents=True, exist_ok=True)
    if not a.llama_bin:
        p = subprocess.run([str(REPO / "scripts" / "build-llama-cpp.sh")], text=True, capture_output=True)
        if p.returncode != 0:
            sys.exit(f"serve_vs_llama_server.py: scripts/build-llama-cpp.sh failed:\n{p.stderr}")
        a.llama_bin = p.stdout.strip().splitlines()[-1]
        if not os.path.isabs(a.llama_bin):
            a.llama_bin = str(REPO / a.llama_bin)
    if a.input_len + a.output_len > a.ctx // a.parallel:
        sys.exit(f"--input-len + --output-len ({a.input_len + a.output_len}) exceeds --ctx / --parallel "
                 f"({a.ctx // a.parallel})")
    kv = kv_bytes_per_token(a.model) * a.ctx
    servers = [s.strip() for s in a.servers.split(",")]
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_before = " ".join(f"{x:.1f}" for x in os.getloadavg())
    results = {s: {c: [] for c in conc} for s in servers}
    cmds, bench_cmds = {}, {}
    for rnd in range(a.rounds):
        for name in servers:
            port = free_port()
            srv = llmserve_server(a, port, kv) if name == "llmserve" else llama_server(a, port)
            cmds[name] = show(srv.cmd)
            log(f"round {rnd + 1}/{a.rounds}: starting {name}")
            with srv:
                log(f"  ready in {srv.ready_s:.1f} s")
                for c, n in zip(conc, nreq):
                    load = os.getloadavg()[0]
                    j, bcmd = bench(a, port, c, n, f"{name}-r{rnd + 1}")
                    bench_cmds[c] = bcmd.replace(str(port), "<port>")
                    j["load1"] = round(load, 2)
                    results[name][c].append(j)
                    log(f"  c={c}: {j['output_throughput']:.1f} output tok/s, TTFT median "
                        f"{j['ttft_ms']['median']:.0f} ms, ITL median {j['itl_ms']['median']:.0f} ms, "
                        f"{j['completed']} ok / {j['failed']} failed (load {load:.1f})")
            if srv.proc.returncode not in (0, -signal.SIGTERM, 143):
                log(f"  {name} exited {srv.proc.returncode}: {srv.log_tail[-1500:]}")
        Path(a.out_dir, "serve-results.json").write_text(json.dumps(results, indent=1))

    def med(xs):
        return statistics.median(xs) if xs else float("nan")

    out = [f"`{Path(a.model).name}`; {date}; {a.threads} threads each; KV budget {a.ctx} tokens "
           f"({kv / 2**30:.2f} GiB f16), {a.parallel} sequences of {a.ctx // a.parallel}; requests of {a.input_len} "
           f"random prompt tokens and {a.output_len} output tokens (EOS ignored), greedy; client `llmserve bench`; "
           f"load average {load_before} before, {' '.join(f'{x:.1f}' for x in os.getloadavg())} after. "
           f"{a.rounds} round(s), alternating; medians over rounds of each run's figures.", "",
           "| server | concurrency | requests ok / failed | output tok/s | TTFT median / p99 ms | "
           "TPOT median / p99 ms | ITL median / p99 ms |", "|---|---|---|---|---|---|---|"]
    for c in conc:
        for name in servers:
            runs = results[name][c]
            if not runs:
                continue

            def m(key, q):
                return med([r[key][q] for r in runs if r[key].get(q) is not None])
            ok = sum(r["completed"] for r in runs)
            bad = sum(r["failed"] for r in runs)
            out.append(f"| {name} | {c} | {ok} / {bad} | {med([r['output_throughput'] for r in runs]):.2f} | "
                       f"{m('ttft_ms', 'median'):.0f} / {m('ttft_ms', 'p99'):.0f} | "
                       f"{m('tpot_ms', 'median'):.0f} / {m('tpot_ms', 'p99'):.0f} | "
                       f"{m('itl_ms', 'median'):.0f} / {m('itl_ms', 'p99'):.0f} |")
        if all(results[s][c] for s in ("llmserve", "llama-server") if s in servers) and len(servers) == 2:
            t0 = med([r["output_throughput"] for r in results[servers[0]][c]])
            t1 = med([r["output_throughput"] for r in results[servers[1]][c]])
            out.append(f"| ratio {servers[0]} / {servers[1]} | {c} | | {t0 / t1:.2f}x | | | |")
    out += ["", "Commands:", "", f"    {show([sys.executable, Path(__file__)] + sys.argv[1:])}"]
    for name, c in cmds.items():
        out.append(f"    # {name}: {c}".replace(str(a.model), Path(a.model).name))
    for c, b in bench_cmds.items():
        out.append(f"    # client, concurrency {c}: {b}")
    text = "\n".join(out)
    print(text)
    if a.md:
        Path(a.md).write_text(text + "\n")


if __name__ == "__main__":
    main()
