#!/usr/bin/env python3
"""Prefix-aware routing benchmark: two llmserve daemons behind smg, cache_aware against
round_robin, and one daemon with both threads (issue 37).

Every configuration serves the same multi-turn chat workload with shared prefixes: --groups
system prompts of about --system-words words, --conversations-per-group conversations on each,
--turns turns per conversation (a question with about --user-words words of order lines under
it), each turn sent with the whole history (the system prompt, every earlier question and the
answer the server gave), so a turn's prompt is the previous turn's plus one answer and one
question. --concurrency
client threads each take the next conversation and play its turns in order. Requests are
streamed chat completions, greedy, --max-tokens tokens with EOS ignored, so every configuration
generates the same number of tokens.

Configurations (--configs), each started fresh for each round:
  cache_aware         two daemons (--threads 1 each, pinned to cores 0 and 1 with taskset) with
                      KV events on, behind `smg launch --policy cache_aware` over gRPC: smg
                      indexes the blocks the workers report over SubscribeKvEvents
  cache_aware_tuned   cache_aware with dispatch bookings (--selection-accounting-ttl-ms 10000) and
                      a spill margin of 2 requests (--balance-abs-threshold 2; smg's default is 64)
  cache_aware_approx  cache_aware with KV events off: smg's cache_aware keeps its own tree of what
                      it routed (approximate mode)
  round_robin         the daemons of cache_aware behind `smg --policy round_robin`
  single              one daemon with --threads 2 (cores 0-1), the client on its HTTP port
  single_smg          that daemon behind smg (round_robin over one worker): the router's own cost

Reported per configuration: the prefix-cache hit rate (prompt tokens found in the prefix cache /
prompt tokens looked up, the delta of the daemons' llmserve_prefix_cache_{hits,queries}_total
over the run, all daemons summed), TTFT median and p90 (first streamed content), output tokens/s
and requests/s over the run's wall time, and how many requests each daemon served. Rounds
interleave the configurations (A B C D, A B C D) so a load change on a shared machine hits all of
them; the table gives the median of the rounds for rates and pools the rounds' requests for
TTFT.

  .venv-routers/bin/python bench/routers/prefix_routing.py --json-out /tmp/prefix_routing.json

Needs build/llmserve, the model (scripts/fetch-model.sh) and smg (tests/requirements-routers.txt,
the venv of `scripts/test.sh --routers`).
"""
import argparse
import json
import os
import queue
import random
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CONFIGS = ("cache_aware", "cache_aware_tuned", "cache_aware_approx", "round_robin", "single",
           "single_smg")
# cache_aware_tuned: book each routed prefix on its worker until the KV events arrive (else the
# requests in flight before the first events all see empty caches), and spill to the other worker
# at 2 requests over the mean instead of 64 (which 8 clients never reach)
TUNED_SMG_ARGS = ["--selection-accounting-ttl-ms", 10000, "--balance-abs-threshold", 2]

SUBJECTS = ["the billing team", "a new customer", "the on-call engineer", "the warehouse",
            "our mobile app", "the support desk", "a premium account", "the legal department",
            "the night shift", "a partner store", "the refund policy", "the data centre"]
VERBS = ["must confirm", "should never promise", "always records", "is allowed to change",
         "reviews", "escalates", "may refuse", "explains", "checks twice", "keeps a copy of"]
OBJECTS = ["the delivery date", "every open ticket", "the invoice number", "a written apology",
           "the shipping address", "any discount above ten percent", "the warranty terms",
           "the customer's last order", "the tracking code", "a replacement part",
           "the opening hours", "the return label"]
QUALIFIERS = ["before the end of the day", "in plain words", "without exception",
              "when the customer asks twice", "unless a manager agrees", "within two hours",
              "for orders over fifty euros", "on weekends too", "after checking the account"]
QUESTIONS = ["My order has not arrived yet, what can you do?",
             "Can I change the shipping address of my last order?",
             "I was charged twice for the same invoice.", "How do I return a broken part?",
             "Do you deliver on Sundays?", "Is the warranty still valid after a repair?",
             "Can I get a discount on my next order?", "Who do I talk to about a refund?",
             "The tracking code does not work.", "Can you send me a written confirmation?",
             "What are your opening hours during holidays?", "Please cancel my subscription."]
FOLLOW_UPS = ["Thanks. And what happens next?", "Can you say that again more briefly?",
              "What if that does not work?", "How long will that take?",
              "Is there anything I should prepare?", "Who decides that?",
              "Can you put that in writing?", "What would a manager say?"]


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def show(cmd):
    def rel(c):
        c = str(c)
        return c[len(str(REPO)) + 1:] if c.startswith(str(REPO) + "/") else c
    return " ".join(shlex.quote(rel(c)) for c in cmd)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load_average():
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def system_prompt(rng, group, words):
    parts = [f"You are the assistant of shop number {group + 1}. Follow these rules."]
    n = len(parts[0].split())
    while n < words:
        s = (f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {rng.choice(OBJECTS)} "
             f"{rng.choice(QUALIFIERS)}.")
        parts.append(s)
        n += len(s.split())
    return " ".join(parts)


def details(rng, words):
    """What a customer pastes under a question: order lines, about `words` words."""
    parts = []
    n = 0
    while n < words:
        s = (f"Order {rng.randint(1000, 9999)} of {rng.randint(1, 28)} "
             f"{rng.choice(['March', 'April', 'May', 'June'])}: {rng.choice(OBJECTS)}, "
             f"{rng.randint(1, 9)} items, {rng.choice(QUALIFIERS)}.")
        parts.append(s)
        n += len(s.split())
    return " ".join(parts)


def make_workload(a):
    """Conversations as (group, system prompt, user turns), groups interleaved in order."""
    rng = random.Random(a.seed)
    prompts = [system_prompt(rng, g, a.system_words) for g in range(a.groups)]
    conversations = []
    for c in range(a.conversations_per_group):
        for g in range(a.groups):
            turns = [rng.choice(QUESTIONS)] + [rng.choice(FOLLOW_UPS) for _ in range(a.turns - 1)]
            turns = [f"{q} {details(rng, a.user_words)}" for q in turns]
            turns[0] = f"Customer {g * a.conversations_per_group + c + 1}: {turns[0]}"
            conversations.append((g, prompts[g], turns))
    return conversations


def wait_http(url, procs, timeout, body=None):
    end = time.time() + timeout
    last = ""
    while time.time() < end:
        for p in procs:
            if p.proc.poll() is not None:
                raise RuntimeError(f"{p.name} exited with {p.proc.returncode}:\n{p.tail()}")
        try:
            data = None if body is None else json.dumps(body).encode()
            req = urllib.request.Request(url, data, {"content-type": "application/json"})
            with urllib.request.urlopen(req, timeout=30) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError) as e:
            last = str(e)
        time.sleep(0.5)
    raise RuntimeError(f"{url} not ready after {timeout} s ({last})")


class Proc:
    """A server process in its own process group, its output in a temporary file."""

    def __init__(self, name, cmd):
        self.name, self.cmd = name, [str(c) for c in cmd]
        self.out = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(self.cmd, stdout=self.out, stderr=subprocess.STDOUT, cwd=REPO,
                                     start_new_session=True)

    def text(self):
        self.out.flush()
        self.out.seek(0)
        return self.out.read()

    def tail(self):
        return self.text()[-4000:]

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.out.close()


class Daemon(Proc):
    def __init__(self, a, name, threads, cores, kv_events):
        self.http_port, self.grpc_port = free_port(), free_port()
        cmd = [a.llmserve, "serve", "--model", a.model, "--host", "127.0.0.1",
               "--http-port", self.http_port, "--grpc-port", self.grpc_port, "--threads", threads,
               "--kv-cache-bytes", a.kv_cache_bytes]
        if kv_events:
            cmd += ["--kv-events.enabled=true",
                    f"--kv-events.endpoint=tcp://127.0.0.1:{free_port()}"]
        if cores and not a.no_pin:
            cmd = ["taskset", "-c", cores] + cmd
        super().__init__(name, cmd)
        self.url = f"http://127.0.0.1:{self.http_port}"

    def settle(self, timeout=10):
        """Waits until no request runs or waits: a client may read a stream's end before the
        daemon counts the request as finished."""
        end = time.time() + timeout
        while time.time() < end:
            c = self.counters()
            if c["running"] + c["waiting"] == 0:
                break
            time.sleep(0.1)
        time.sleep(0.5)

    def counters(self):
        """llmserve's prefix-cache and request counters from /metrics."""
        with urllib.request.urlopen(self.url + "/metrics", timeout=10) as r:
            text = r.read().decode()
        out = {"queries": 0.0, "hits": 0.0, "requests": 0.0, "prompt_tokens": 0.0,
               "running": 0.0, "waiting": 0.0}
        names = {"llmserve_requests_running": "running", "llmserve_requests_waiting": "waiting",
                 "llmserve_prefix_cache_queries_total": "queries",
                 "llmserve_prefix_cache_hits_total": "hits",
                 "llmserve_requests_finished_total": "requests",
                 "llmserve_prompt_tokens_total": "prompt_tokens"}
        for line in text.splitlines():
            name = line.split("{", 1)[0].split(" ", 1)[0]
            if name in names:
                out[names[name]] += float(line.rsplit(" ", 1)[1])
        return out


def start_config(a, config):
    """(daemons, smg or None, chat URL, every process started)."""
    two = config in ("cache_aware", "cache_aware_tuned", "cache_aware_approx", "round_robin")
    multi_core = len(os.sched_getaffinity(0)) >= 2
    if two:
        daemons = [Daemon(a, f"llmserve-{i}", 1, str(i) if multi_core else None,
                          kv_events=config != "cache_aware_approx") for i in range(2)]
    else:
        daemons = [Daemon(a, "llmserve", 2, "0,1" if multi_core else None, kv_events=False)]
    procs = list(daemons)
    try:
        for d in daemons:
            wait_http(d.url + "/ready", procs, 300)
        model = json.load(urllib.request.urlopen(daemons[0].url + "/v1/models"))["data"][0]["id"]
        gateway = None
        url = daemons[0].url
        if config != "single":
            port = free_port()
            policy = "round_robin" if config in ("round_robin", "single_smg") else "cache_aware"
            cmd = [a.smg, "launch", "--host", "127.0.0.1", "--port", port,
                   "--worker-urls", *[f"grpc://127.0.0.1:{d.grpc_port}" for d in daemons],
                   "--policy", policy, "--prometheus-port", free_port(),
                   "--worker-startup-check-interval", 1, "--log-level", "info"]
            cmd += (TUNED_SMG_ARGS if config == "cache_aware_tuned" else []) + a.smg_arg
            gateway = Proc("smg", cmd)
            procs.append(gateway)
            url = f"http://127.0.0.1:{port}"
            wait_http(url + "/v1/chat/completions", procs, 240, {
                "model": model, "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 1, "temperature": 0})
        return daemons, gateway, url, model, procs
    except BaseException:
        for p in procs:
            p.stop()
        raise


def chat(url, model, messages, max_tokens, timeout):
    """One streamed greedy chat completion: (answer, TTFT s, latency s, usage)."""
    body = {"model": model, "messages": messages, "max_tokens": max_tokens, "temperature": 0,
            "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True}}
    req = urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"content-type": "application/json"})
    t0 = time.perf_counter()
    ttft, text, usage = None, [], None
    with urllib.request.urlopen(req, timeout=timeout) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            chunk = json.loads(data)
            if chunk.get("usage"):
                usage = chunk["usage"]
            for choice in chunk.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    if ttft is None:
                        ttft = time.perf_counter() - t0
                    text.append(piece)
    return "".join(text), ttft, time.perf_counter() - t0, usage


def run_workload(a, url, model, conversations):
    todo = queue.Queue()
    for c in conversations:
        todo.put(c)
    results, errors = [], []
    lock = threading.Lock()

    def client():
        while True:
            try:
                group, system, turns = todo.get_nowait()
            except queue.Empty:
                return
            messages = [{"role": "system", "content": system}]
            for turn, question in enumerate(turns):
                messages.append({"role": "user", "content": question})
                try:
                    answer, ttft, latency, usage = chat(url, model, messages, a.max_tokens,
                                                        a.request_timeout)
                except (urllib.error.URLError, OSError, ValueError) as e:
                    with lock:
                        errors.append(f"{type(e).__name__}: {e}")
                    break
                messages.append({"role": "assistant", "content": answer})
                with lock:
                    results.append({"group": group, "turn": turn, "ttft_s": ttft,
                                    "latency_s": latency,
                                    "prompt_tokens": (usage or {}).get("prompt_tokens"),
                                    "output_tokens": (usage or {}).get("completion_tokens")})

    threads = [threading.Thread(target=client) for _ in range(a.concurrency)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, errors, time.perf_counter() - t0


def run_config(a, config, conversations, rnd):
    daemons, gateway, url, model, procs = start_config(a, config)
    try:
        for d in daemons:  # the first request of a fresh daemon is not part of the workload
            chat(d.url, model, [{"role": "user", "content": "Warm up."}], 4, a.request_timeout)
            d.settle()
        before = [d.counters() for d in daemons]
        load_before = load_average()
        results, errors, wall = run_workload(a, url, model, conversations)
        load_after = load_average()
        for d in daemons:
            d.settle()
        after = [d.counters() for d in daemons]
        smg_log = gateway.text() if gateway else ""
    finally:
        cmds = [show(p.cmd) for p in procs]
        for p in procs:
            if a.log_dir:
                Path(a.log_dir).mkdir(parents=True, exist_ok=True)
                (Path(a.log_dir) / f"r{rnd}-{config}-{p.name}.log").write_text(p.text())
        for p in reversed(procs):  # the gateway first
            p.stop()
    delta = [{k: after[i][k] - before[i][k] for k in before[i]} for i in range(len(daemons))]
    queries = sum(d["queries"] for d in delta)
    hits = sum(d["hits"] for d in delta)
    ttfts = [r["ttft_s"] for r in results if r["ttft_s"] is not None]
    out_tokens = sum(r["output_tokens"] or 0 for r in results)
    return {
        "config": config, "commands": cmds, "wall_s": wall, "requests": len(results),
        "errors": errors, "load_before": load_before, "load_after": load_after,
        "prefix_cache_queries": queries, "prefix_cache_hits": hits,
        "hit_rate": hits / queries if queries else None,
        "requests_per_daemon": [int(d["requests"]) for d in delta],
        "prompt_tokens_per_daemon": [int(d["prompt_tokens"]) for d in delta],
        "ttft_median_s": statistics.median(ttfts) if ttfts else None,
        "ttft_p90_s": quantile(ttfts, 0.9),
        "output_tokens": out_tokens, "output_tok_s": out_tokens / wall,
        "requests_s": len(results) / wall,
        "kv_event_streams": smg_log.count("KV event stream connected"),
        "results": results,
    }


def quantile(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    i = q * (len(xs) - 1)
    lo = int(i)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (i - lo)


LABELS = {
    "cache_aware": "2 daemons x 1 thread, smg cache_aware (KV events)",
    "cache_aware_tuned": "2 daemons x 1 thread, smg cache_aware (KV events, bookings, spill at +2)",
    "cache_aware_approx": "2 daemons x 1 thread, smg cache_aware (approximate)",
    "round_robin": "2 daemons x 1 thread, smg round_robin",
    "single": "1 daemon x 2 threads, direct",
    "single_smg": "1 daemon x 2 threads, behind smg",
}


def summarize(runs, configs):
    rows = []
    for config in configs:
        rs = [r for r in runs if r["config"] == config]
        ttfts = [x["ttft_s"] for r in rs for x in r["results"] if x["ttft_s"] is not None]

        def med(key):
            vals = [r[key] for r in rs if r[key] is not None]
            return statistics.median(vals) if vals else None
        rows.append({
            "config": config, "label": LABELS[config], "rounds": len(rs),
            "hit_rate": med("hit_rate"), "hit_rate_rounds": [r["hit_rate"] for r in rs],
            "ttft_median_s": statistics.median(ttfts) if ttfts else None,
            "ttft_p90_s": quantile(ttfts, 0.9),
            "output_tok_s": med("output_tok_s"),
            "output_tok_s_rounds": [r["output_tok_s"] for r in rs],
            "requests_s": med("requests_s"), "wall_s": med("wall_s"),
            "requests_per_daemon": [r["requests_per_daemon"] for r in rs],
            "errors": sum(len(r["errors"]) for r in rs),
        })
    return rows


def markdown(rows, a, n_requests):
    lines = [
        f"{a.groups} system prompts x {a.conversations_per_group} conversations x {a.turns} turns "
        f"= {n_requests} requests per run, concurrency {a.concurrency}, {a.max_tokens} output "
        f"tokens each (greedy, EOS ignored); median of {a.rounds} rounds (TTFT: all rounds' "
        "requests pooled).",
        "",
        "| configuration | prefix-cache hit rate | TTFT median | TTFT p90 | output tok/s "
        "| requests/s | requests per daemon |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        hr = "-" if r["hit_rate"] is None else (
            f"{100 * r['hit_rate']:.1f} % ("
            + ", ".join(f"{100 * h:.1f}" for h in r["hit_rate_rounds"] if h is not None) + ")")
        tok = "-" if r["output_tok_s"] is None else (
            f"{r['output_tok_s']:.1f} ("
            + ", ".join(f"{v:.1f}" for v in r["output_tok_s_rounds"]) + ")")
        split = "; ".join("/".join(str(n) for n in s) for s in r["requests_per_daemon"])
        ms = (lambda v: "-" if v is None else f"{1000 * v:.0f} ms")
        err = f" ({r['errors']} failed)" if r["errors"] else ""
        lines.append(f"| {r['label']}{err} | {hr} | {ms(r['ttft_median_s'])} | "
                     f"{ms(r['ttft_p90_s'])} | {tok} | {r['requests_s']:.2f} | {split} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__)
    ap.add_argument("--model", default=str(REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--llmserve", default=str(REPO / "build" / "llmserve"))
    ap.add_argument("--smg", default=None, help="smg console script (default: beside this "
                    "Python, else on PATH)")
    ap.add_argument("--configs",
                    default="cache_aware,cache_aware_tuned,cache_aware_approx,round_robin,single",
                    help=f"comma list of {', '.join(CONFIGS)}")
    ap.add_argument("--smg-arg", action="append", default=[],
                    help="extra argument of every smg launch (repeat)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--groups", type=int, default=4, help="system prompts")
    ap.add_argument("--conversations-per-group", type=int, default=4)
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--system-words", type=int, default=400)
    ap.add_argument("--user-words", type=int, default=60, help="order lines under each question")
    ap.add_argument("--max-tokens", type=int, default=24)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--kv-cache-bytes", default="1GiB", help="KV cache of each daemon")
    ap.add_argument("--request-timeout", type=float, default=300)
    ap.add_argument("--seed", type=int, default=37)
    ap.add_argument("--no-pin", action="store_true", help="do not pin daemons to cores")
    ap.add_argument("--json-out", default=None)
    ap.add_argument("--md", default=None, help="also write the markdown table here")
    ap.add_argument("--log-dir", default=None, help="keep every server's output here")
    a = ap.parse_args()

    configs = [c for c in a.configs.split(",") if c]
    for c in configs:
        if c not in CONFIGS:
            ap.error(f"unknown configuration {c}")
    a.smg = a.smg or str(Path(sys.executable).parent / "smg")
    if not Path(a.smg).exists():
        a.smg = shutil.which("smg") or ap.error("smg not found: install tests/requirements-"
                                                "routers.txt (scripts/test.sh --routers)")
    for f in (a.llmserve, a.model):
        if not Path(f).exists():
            ap.error(f"{f} is missing (build llmserve; scripts/fetch-model.sh)")

    conversations = make_workload(a)
    n_requests = len(conversations) * a.turns
    log(f"{len(conversations)} conversations, {n_requests} requests per run; load {load_average()}")
    runs = []
    for rnd in range(a.rounds):
        for config in configs:
            log(f"round {rnd + 1}/{a.rounds}: {config}")
            r = run_config(a, config, conversations, rnd + 1)
            r["round"] = rnd + 1
            runs.append(r)
            hr = "-" if r["hit_rate"] is None else f"{100 * r['hit_rate']:.1f} %"
            log(f"  {r['requests']} requests in {r['wall_s']:.1f} s, hit rate {hr}, TTFT median "
                f"{1000 * (r['ttft_median_s'] or 0):.0f} ms, {r['output_tok_s']:.1f} tok/s, per "
                f"daemon {r['requests_per_daemon']}, load {r['load_before']} -> "
                f"{r['load_after']}" + (f", {len(r['errors'])} errors: {r['errors'][:2]}"
                                        if r["errors"] else ""))
    rows = summarize(runs, configs)
    table = markdown(rows, a, n_requests)
    print(table)
    if a.md:
        Path(a.md).write_text(table + "\n")
    if a.json_out:
        Path(a.json_out).write_text(json.dumps({
            "argv": sys.argv, "params": {k: v for k, v in vars(a).items()},
            "summary": rows, "runs": runs}, indent=1))
        log(f"wrote {a.json_out}")


if __name__ == "__main__":
    main()
