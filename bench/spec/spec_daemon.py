"""Daemon mode of bench/spec/spec_bench.py: speculative decoding through HTTP, llmserve vs llama.cpp.

For every round, engine and method (the order rotates each round) it starts a fresh server,

    build/llmserve serve --model.path M --server.http-port PORT --server.grpc-port 0 \\
        --engine.threads 2 --no-engine.enable-prefix-caching \\
        [--speculative.method ngram --speculative.num-tokens 4]
    build-llamacpp/build/bin/llama-server -m M --port PORT2 -t 2 -c CTX -np MAXCONC --kv-unified \\
        --no-webui --no-cache-prompt --cache-ram 0 --spec-type none | --spec-type ngram-simple \\
        --spec-ngram-simple-size-n 3 --spec-ngram-simple-size-m 4

(prompt caching is off in both, so a rerun pass or the T=0.7 pass after the greedy one does not
find its prompts cached: --prefix-cache turns it back on; CTX = max(--ctx, 640 * MAXCONC);
llama-server's draft length for ngram-simple is --spec-ngram-simple-size-m; --draft-max /
--draft-min were removed upstream and only refer to draft models now as --spec-draft-n-max/-min;
size-n is the exact n-gram looked up in prompt + output, and a draft needs size-m >= size-n),
waits for it to be ready (GET /ready resp. /health = 200), sends one warm-up request, then for
every concurrency (1, 4, 16) and sampling setting sends all prompts through
POST /v1/chat/completions with stream: true and stream_options.include_usage, from that many
client threads. Per request: decode tok/s = (completion_tokens - 1) / (last content chunk - first
content chunk), completion_tokens from the usage chunk (or llama-server's timings.predicted_n, or
the count of content chunks); per pass: total throughput = completion tokens / wall. For llmserve
it scrapes GET /metrics before and after each pass (llmserve_spec_decode_num_draft_tokens_total,
llmserve_spec_decode_num_accepted_tokens_total); for llama-server it sums timings.draft_n and
draft_n_accepted of the responses. The report puts the speed-up ngram / none of each engine side
by side. Standard library only.
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from spec_bench import (SAMPLINGS, CpuMeter, fmt, load_prompts, loadavg_str, loud, machine_facts,
                        median, noise_line, noisy, ratio, shell_join, wait_idle,
                        write_outputs)

SPEC_METRICS = ("llmserve_spec_decode_num_draft_tokens_total",
                "llmserve_spec_decode_num_accepted_tokens_total")
NGRAM_N = 3  # llama-server --spec-ngram-simple-size-n (llmserve's ngram tries 4 down to 1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port, path, timeout=5.0):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read().decode("utf-8", "replace")
    finally:
        conn.close()


def scrape(port):
    """Sums of the speculative counters in llmserve's /metrics (all label sets)."""
    try:
        status, text = http_get(port, "/metrics")
    except OSError:
        return {}
    if status != 200:
        return {}
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in SPEC_METRICS:
            out[name] = out.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


class Server:
    """One server process (we started it, we stop it by its pid)."""

    def __init__(self, engine, method, args, max_conc):
        self.engine, self.method, self.port = engine, method, free_port()
        self.log = tempfile.NamedTemporaryFile("w+", prefix=f"spec_{engine}_{method}_",
                                               suffix=".log", delete=False)
        if engine == "llmserve":
            argv = [args.llmserve, "serve", "--model.path", args.model,
                    "--server.http-port", str(self.port), "--server.grpc-port", "0",
                    "--engine.threads", str(args.threads)]
            if not args.prefix_cache:
                argv.append("--no-engine.enable-prefix-caching")
            if method != "none":
                argv += ["--speculative.method", method,
                         "--speculative.num-tokens", str(args.num_tokens)]
            argv += args.llmserve_arg
            self.ready_path = "/ready"
        else:
            ctx = max(args.ctx, 640 * max_conc)
            argv = [args.llamacpp, "-m", args.model, "--host", "127.0.0.1",
                    "--port", str(self.port), "-t", str(args.threads), "-c", str(ctx),
                    "-np", str(max_conc), "--kv-unified", "--no-webui"]
            if not args.prefix_cache:
                argv += ["--no-cache-prompt", "--cache-ram", "0"]
            argv += ["--spec-type", method]
            if method in ("ngram-simple", "ngram-map-k", "ngram-map-k4v"):
                argv += [f"--spec-{method}-size-n", str(min(NGRAM_N, args.num_tokens)),
                         f"--spec-{method}-size-m", str(args.num_tokens)]
            argv += args.llamacpp_arg
            self.ready_path = "/health"
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        self.model_name = None

    def wait_ready(self, timeout=180):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                status, _ = http_get(self.port, self.ready_path, timeout=2)
                if status == 200:
                    try:
                        _, body = http_get(self.port, "/v1/models")
                        self.model_name = json.loads(body)["data"][0]["id"]
                    except (OSError, ValueError, KeyError, IndexError):
                        self.model_name = None
                    return
            except OSError:
                pass
            time.sleep(0.3)
        self.stop()
        sys.exit(f"{self.engine} did not become ready: {shell_join(self.argv)}\n{self.log_tail()}")

    def log_tail(self, n=3000):
        self.log.flush()
        with open(self.log.name, encoding="utf-8", errors="replace") as f:
            return f.read()[-n:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        os.unlink(self.log.name)


def stream_chat(port, model_name, prompt, sampling, timeout):
    """One streamed chat completion; returns the per-request record."""
    s = SAMPLINGS[sampling]
    body = {"messages": prompt["messages"], "max_tokens": prompt["max_tokens"], "stream": True,
            "stream_options": {"include_usage": True}, "temperature": s["temperature"]}
    if s["temperature"] > 0:
        body["seed"] = s["seed"]
    if model_name:
        body["model"] = model_name
    rec = {"id": prompt["id"], "kind": prompt["kind"]}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    t0 = time.perf_counter()
    first = last = None
    n_chunks, parts, usage, timings, finish = 0, [], None, None, None
    try:
        conn.request("POST", "/v1/chat/completions", body=json.dumps(body),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            rec["error"] = f"HTTP {resp.status}: {resp.read()[:300]!r}"
            return rec
        while True:
            line = resp.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                break
            now = time.perf_counter()
            ev = json.loads(data)
            if ev.get("usage"):
                usage = ev["usage"]
            if ev.get("timings"):
                timings = ev["timings"]
            for ch in ev.get("choices") or []:
                content = (ch.get("delta") or {}).get("content")
                if content:
                    first = now if first is None else first
                    last = now
                    n_chunks += 1
                    parts.append(content)
                if ch.get("finish_reason"):
                    finish = ch["finish_reason"]
    except (OSError, ValueError) as e:
        rec["error"] = f"{type(e).__name__}: {e}"
        return rec
    finally:
        conn.close()
    ct = None
    if usage and usage.get("completion_tokens") is not None:
        ct = usage["completion_tokens"]
    elif timings and timings.get("predicted_n") is not None:
        ct = timings["predicted_n"]
    else:
        ct = n_chunks
    span = (last - first) if first is not None else None
    rec.update({"prompt_tokens": (usage or {}).get("prompt_tokens"),
                "completion_tokens": ct, "content_chunks": n_chunks, "finish_reason": finish,
                "ttft_ms": 1e3 * (first - t0) if first is not None else None,
                "e2e_ms": 1e3 * (time.perf_counter() - t0),
                "decode_tok_s": (ct - 1) / span if span and ct and ct > 1 else None,
                "text": "".join(parts)})
    if timings:
        rec["server_decode_tok_s"] = timings.get("predicted_per_second")
        rec["draft_tokens"] = timings.get("draft_n", 0)
        rec["accepted_tokens"] = timings.get("draft_n_accepted", 0)
    return rec


def run_pass(server, prompts, conc, sampling, args):
    timeout = args.timeout
    waited, busy = wait_idle(args.wait_idle) if args.wait_idle > 0 else (0.0, None)
    before = scrape(server.port) if server.engine == "llmserve" else {}
    meter = CpuMeter([server.proc.pid])
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=conc) as pool:
        recs = list(pool.map(lambda p: stream_chat(server.port, server.model_name, p, sampling,
                                                   timeout), prompts))
    wall = time.perf_counter() - t0
    cpu = dict(meter.stop(), idle_wait_s=waited, busy_before=busy)
    after = scrape(server.port) if server.engine == "llmserve" else {}
    errors = [r for r in recs if "error" in r]
    for r in errors:
        print(f"  ERROR {server.engine} {server.method} {r['id']}: {r['error']}", file=sys.stderr)
    toks = sum(r.get("completion_tokens") or 0 for r in recs)
    if server.engine == "llmserve":
        draft = after.get(SPEC_METRICS[0], 0) - before.get(SPEC_METRICS[0], 0)
        acc = after.get(SPEC_METRICS[1], 0) - before.get(SPEC_METRICS[1], 0)
    else:
        draft = sum(r.get("draft_tokens") or 0 for r in recs)
        acc = sum(r.get("accepted_tokens") or 0 for r in recs)
    return {"wall_s": wall, "completion_tokens": toks, "throughput_tok_s": toks / wall,
            "draft_tokens": draft, "accepted_tokens": acc, "errors": len(errors), "cpu": cpu,
            "metrics_before": before, "metrics_after": after, "requests": recs}


def daemon_mode(args):
    prompts = load_prompts(args.prompts, args.kinds, args.limit)
    engines = [e for e in args.engines.split(",") if e]
    concs = [int(c) for c in args.concurrency.split(",") if c]
    methods = {"llmserve": [m for m in args.llmserve_methods.split(",") if m],
               "llamacpp": [m for m in args.llamacpp_methods.split(",") if m]}
    for e in engines:
        binary = args.llmserve if e == "llmserve" else args.llamacpp
        if not os.path.exists(binary):
            sys.exit(f"{e}: no binary at {binary}")
    if "llmserve" in engines:
        h = subprocess.run([args.llmserve, "serve", "--help"], capture_output=True, text=True)
        if "speculative.method" not in h.stdout + h.stderr:
            dropped = [m for m in methods["llmserve"] if m != "none"]
            if dropped:
                loud(f"this llmserve has no --speculative.method: dropping llmserve {dropped}")
            methods["llmserve"] = ["none"]
    facts, load_before = machine_facts(), loadavg_str()
    passes, commands = [], {}
    for rnd in range(args.rounds):
        for engine in engines:
            ms = methods[engine]
            for method in ms[rnd % len(ms):] + ms[:rnd % len(ms)]:
                srv = Server(engine, method, args, max(concs))
                commands[(engine, method)] = shell_join(srv.argv)
                try:
                    srv.wait_ready()
                    stream_chat(srv.port, srv.model_name, dict(prompts[0], max_tokens=16), "greedy",
                                args.timeout)  # warm-up
                    for conc in concs:
                        for sampling in args.samplings:
                            for attempt in range(args.retries + 1):
                                p = run_pass(srv, prompts, conc, sampling, args)
                                if not noisy(args, p["cpu"], attempt):
                                    break
                            p.update({"round": rnd, "engine": engine, "method": method,
                                      "concurrency": conc, "sampling": sampling,
                                      "attempts": attempt + 1})
                            passes.append(p)
                            if args.out:  # a checkpoint, in case the run gets cut short
                                with open(args.out + ".partial.json", "w") as f:
                                    json.dump(passes, f)
                            print(f"round {rnd} {engine:8s} {method:12s} conc {conc:2d} "
                                  f"{sampling:6s} {p['completion_tokens']} tok in "
                                  f"{p['wall_s']:.1f}s = {p['throughput_tok_s']:.1f} tok/s, foreign CPU "
                                  f"{p['cpu']['foreign_cpu_s']:.1f}s "
                                  f"(load {loadavg_str()})", file=sys.stderr)
                finally:
                    srv.stop()
    summary = summarize(passes, engines, methods, concs, args.samplings)
    md = report(args, facts, load_before, loadavg_str(), commands, summary, len(prompts))
    md += noise_line(passes)
    write_outputs(args.out, md, {"mode": "daemon", "facts": facts, "load_before": load_before,
                                 "load_after": loadavg_str(),
                                 "commands": {f"{e} {m}": c for (e, m), c in commands.items()},
                                 "summary": summary, "passes": passes})


def summarize(passes, engines, methods, concs, samplings):
    def sel(engine, method, conc, sampling):
        return [p for p in passes if (p["engine"], p["method"], p["concurrency"],
                                      p["sampling"]) == (engine, method, conc, sampling)]
    rows = []
    for engine in engines:
        base_m = methods[engine][0] if "none" not in methods[engine] else "none"
        for conc in concs:
            for sampling in samplings:
                base = {p["round"]: p for p in sel(engine, base_m, conc, sampling)}
                for method in methods[engine]:
                    ps = sel(engine, method, conc, sampling)
                    for kind in ("grounded", "open", "all"):
                        dec, ttft, spd, same = [], [], [], []
                        for p in ps:
                            b = {r["id"]: r for r in base[p["round"]]["requests"]}
                            for r in p["requests"]:
                                if "error" in r or (kind != "all" and r["kind"] != kind):
                                    continue
                                dec.append(r["decode_tok_s"])
                                ttft.append(r["ttft_ms"])
                                spd.append(ratio(r["decode_tok_s"], b[r["id"]].get("decode_tok_s")))
                                same.append(r.get("text") == b[r["id"]].get("text"))
                        row = {"engine": engine, "method": method, "concurrency": conc,
                               "sampling": sampling, "kind": kind, "n": len(dec),
                               "decode_tok_s": median(dec), "ttft_ms": median(ttft),
                               "speedup_vs_none": median(spd),
                               "same_text_as_none": f"{sum(same)}/{len(same)}"}
                        if kind == "all":
                            thr = median([p["throughput_tok_s"] for p in ps])
                            bthr = median([p["throughput_tok_s"] for p in base.values()])
                            d = sum(p["draft_tokens"] for p in ps)
                            a = sum(p["accepted_tokens"] for p in ps)
                            row.update({"throughput_tok_s": thr,
                                        "throughput_vs_none": ratio(thr, bthr),
                                        "draft_tokens": d, "accepted_tokens": a,
                                        "acceptance": ratio(a, d),
                                        "errors": sum(p["errors"] for p in ps)})
                        rows.append(row)
    return rows


def report(args, facts, load_before, load_after, commands, summary, n):
    out = ["# Speculative decoding, daemon mode (HTTP, streamed chat completions)", "",
           f"- machine: {facts.get('cpu', '?')}, nproc {facts['nproc']}, {facts['platform']}",
           f"- load average before: {load_before}; after: {load_after}",
           f"- {n} prompts, {args.rounds} round(s), concurrency {args.concurrency}, samplings "
           f"{','.join(args.samplings)}, K = {args.num_tokens}; one fresh server per engine, "
           "method and round, one warm-up request",
           "- decode tok/s: per request, (completion_tokens - 1) / (last - first content "
           "chunk), median over requests; speed-up: median of per-request (method / none, same "
           "prompt, same round); throughput: completion tokens / wall of the pass", "",
           "Commands:", ""]
    out += [f"    {c}" for c in commands.values()]
    out += ["", "## Speed-up of n-gram speculation vs none, side by side", "",
            "| concurrency | sampling | kind | " + " | ".join(
                f"{e} decode x | {e} throughput x" for e in engines_of(summary)) + " |",
            "|---|---|---|" + "---|---|" * len(engines_of(summary))]
    keys = sorted({(r["concurrency"], r["sampling"], r["kind"]) for r in summary},
                  key=lambda k: (k[0], k[1], ["grounded", "open", "all"].index(k[2])))
    for conc, sampling, kind in keys:
        cells = []
        for e in engines_of(summary):
            rs = [r for r in summary if (r["engine"], r["concurrency"], r["sampling"], r["kind"])
                  == (e, conc, sampling, kind) and r["method"] != "none"]
            r = rs[0] if rs else {}
            cells += [fmt(r.get("speedup_vs_none"), 2), fmt(r.get("throughput_vs_none"), 2)]
        out.append(f"| {conc} | {sampling} | {kind} | " + " | ".join(cells) + " |")
    out += ["", "## All numbers", "",
            "| engine | method | conc | sampling | kind | n | decode tok/s | TTFT ms | speed-up "
            "| same text as none | throughput tok/s | accept rate (draft/acc) | errors |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in summary:
        acc = ""
        if r["kind"] == "all":
            acc = f"{fmt(r['acceptance'], 2)} ({r['draft_tokens']:.0f}/{r['accepted_tokens']:.0f})"
        out.append(f"| {r['engine']} | {r['method']} | {r['concurrency']} | {r['sampling']} | "
                   f"{r['kind']} | {r['n']} | {fmt(r['decode_tok_s'])} | {fmt(r['ttft_ms'])} | "
                   f"{fmt(r['speedup_vs_none'], 2)} | {r['same_text_as_none']} | "
                   f"{fmt(r.get('throughput_tok_s'))} | {acc} | {r.get('errors', '')} |")
    return "\n".join(out) + "\n"


def engines_of(summary):
    seen = []
    for r in summary:
        if r["engine"] not in seen:
            seen.append(r["engine"])
    return seen
