#!/usr/bin/env python3
"""The daemon stage of scripts/gpu-check.sh: starts `llmserve serve --device cuda` on an HF model
directory, waits for /ready, serves real requests and checks them, then stops it with SIGTERM.

    daemon_check.py --llmserve "LOADER --library-path P BUNDLE/bin/llmserve" --model DIR --out DIR

Checks (each printed as `DAEMON ok|FAIL name: detail`, all written to OUT/daemon.json):
streaming /v1/completions and /v1/chat/completions (SSE parsed: text non-empty, finish_reason
set, [DONE], usage), non-streaming greedy completions twice (same text; greedy logprobs: the
chosen token's logprob is the largest), seeded sampling twice (same text), gRPC Generate through
the bundled `llmserve bench --grpc`, a short HTTP serving benchmark at concurrency 16, /metrics
(request and token counters moved by what was sent), and a clean exit on SIGTERM. HTTP is plain
urllib (no third-party packages). Exit status 0 only when every check passed.
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
import time
import urllib.error
import urllib.request

MAX_TOKENS = 16


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Checks:
    def __init__(self):
        self.items = []

    def add(self, name, ok, detail=""):
        self.items.append({"name": name, "ok": bool(ok), "detail": str(detail)[:400]})
        print(f"DAEMON {'ok' if ok else 'FAIL'} {name}: {detail}"[:500], flush=True)
        return ok

    def run(self, name, fn):
        """fn() returns (ok, detail); an exception is a failure."""
        try:
            ok, detail = fn()
        except Exception as e:  # noqa: BLE001 - any error fails this check only
            ok, detail = False, f"{type(e).__name__}: {e}"
        return self.add(name, ok, detail)

    def passed(self):
        return all(i["ok"] for i in self.items)


def http(base, path, body=None, timeout=60):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data,
                                 headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.read().decode("utf-8", errors="replace")


def sse_events(base, path, body, timeout=60):
    """The JSON payloads of a server-sent-event stream, and whether [DONE] ended it."""
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json",
                                          "Accept": "text/event-stream"})
    events, done = [], False
    with urllib.request.urlopen(req, timeout=timeout) as r:
        for raw in r:
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                done = True
                break
            events.append(json.loads(payload))
    return events, done


def parse_metrics(text):
    """{(name, frozenset(labels.items())): value} of a Prometheus text exposition."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)", line)
        if not m or line.startswith("#"):
            continue
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        try:
            out[(m.group(1), labels)] = float(m.group(3))
        except ValueError:
            pass
    return out


def metric_sum(metrics, name, **want):
    return sum(v for (n, labels), v in metrics.items()
               if n == name and all(dict(labels).get(k) == val for k, val in want.items()))


def special_ids(model_dir):
    with open(os.path.join(model_dir, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    return [a["id"] for a in tok.get("added_tokens", []) if a.get("special")]


def check_stream(events, done, kind):
    texts, finish, usage = [], None, None
    for e in events:
        if e.get("usage"):
            usage = e["usage"]
        for c in e.get("choices", []):
            texts.append(c.get("text") or (c.get("delta") or {}).get("content") or "")
            finish = c.get("finish_reason") or finish
    text = "".join(texts)
    ok = bool(text) and finish == "length" and done
    if usage is not None:
        ok = ok and usage.get("completion_tokens") == MAX_TOKENS
    return ok, (f"{len(events)} events, {kind} text {text[:60]!r}, finish_reason {finish}, "
                f"[DONE] {done}, usage {usage}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llmserve", required=True, help="command that runs the llmserve binary")
    ap.add_argument("--model", required=True, help="HF model directory with a tokenizer")
    ap.add_argument("--out", required=True)
    ap.add_argument("--ready-timeout", type=float, default=150)
    ap.add_argument("--device", default="cuda", help="engine.device (cpu: check this script "
                    "without a GPU)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    cmd = shlex.split(args.llmserve)
    hp, gp = free_port(), free_port()
    while gp == hp:
        gp = free_port()
    base = f"http://127.0.0.1:{hp}"
    log_path = os.path.join(args.out, "daemon-serve.log")
    checks = Checks()
    serve = cmd + ["serve", "--model", args.model, "--device", args.device, "--host", "127.0.0.1",
                   "--http-port", str(hp), "--grpc-port", str(gp), "--max-num-seqs", "32",
                   "--max-model-len", "2048", "--gpu-memory-utilization", "0.3"]
    t0 = time.time()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(serve, stdout=log, stderr=subprocess.STDOUT)
    ready = False
    while time.time() - t0 < args.ready_timeout and proc.poll() is None:
        try:
            ready = http(base, "/ready", timeout=2)[0] == 200
        except (urllib.error.URLError, OSError):
            ready = False
        if ready:
            break
        time.sleep(0.25)
    log_text = open(log_path, errors="replace").read()
    if not checks.add("ready", ready, f"after {time.time() - t0:.1f} s" if ready else
                      f"exit code {proc.poll()}; log tail: {log_text[-300:]}"):
        return finish(checks, args.out, proc)
    backend = re.search(r"engine: .* on (\w+),", log_text)
    checks.add(f"backend is {args.device}", backend is not None and backend.group(1) == args.device,
               backend.group(0)[:160] if backend else "no 'engine: ... on <backend>' line")
    for pat in (r"CUDA graphs: .*", r"CUDA KV cache: .*"):
        m = re.search(pat, log_text)
        if m:
            print(f"DAEMON note {m.group(0)[:200]}")
    try:
        run_requests(checks, base, gp, cmd, args)
        reference = spec_outputs(base)
        checks.run("speculative (ngram) output equals off",
                   lambda: spec_check(cmd, args, reference))
    except Exception as e:  # noqa: BLE001 - reported as a failed check, then a clean stop
        checks.add("requests", False, f"{type(e).__name__}: {e}")
    return finish(checks, args.out, proc)


SPEC_PROMPTS = ["1 2 3 4 5 1 2 3 4 5 1 2 3 4 5 1 2 3", "Once upon a time there was a cat. Once "
                "upon a time there was a dog. Once upon a time"]


def spec_outputs(base):
    """Greedy and seeded completions (text and logprobs) of SPEC_PROMPTS on one daemon."""
    out = []
    for prompt in SPEC_PROMPTS:
        for kw in ({"temperature": 0}, {"temperature": 0.8, "top_p": 0.9, "seed": 7}):
            body = dict(prompt=prompt, max_tokens=32, ignore_eos=True, logprobs=1, **kw)
            c = json.loads(http(base, "/v1/completions", body)[1])["choices"][0]
            out.append((c["text"], (c.get("logprobs") or {}).get("token_logprobs")))
    return out


def spec_check(cmd, args, reference):
    """A second daemon with n-gram speculation (every step drafts) must give the same tokens."""
    hp, gp = free_port(), free_port()
    base = f"http://127.0.0.1:{hp}"
    serve = cmd + ["serve", "--model", args.model, "--device", args.device, "--host", "127.0.0.1",
                   "--http-port", str(hp), "--grpc-port", str(gp), "--max-num-seqs", "32",
                   "--max-model-len", "2048", "--gpu-memory-utilization", "0.3",
                   "--speculative.method", "ngram", "--speculative.draft-token-cost", "0",
                   "--speculative.max-running-requests", "64"]
    with open(os.path.join(args.out, "daemon-spec.log"), "w") as log:
        proc = subprocess.Popen(serve, stdout=log, stderr=subprocess.STDOUT)
    try:
        t0 = time.time()
        while time.time() - t0 < args.ready_timeout and proc.poll() is None:
            try:
                if http(base, "/ready", timeout=2)[0] == 200:
                    break
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        got = spec_outputs(base)
        m = parse_metrics(http(base, "/metrics")[1])
        drafted = metric_sum(m, "llmserve_spec_decode_num_draft_tokens_total")
        accepted = metric_sum(m, "llmserve_spec_decode_num_accepted_tokens_total")
        same = sum(g == r for g, r in zip(got, reference))
        ok = same == len(reference) and drafted > 0
        return ok, (f"{same}/{len(reference)} completions identical (text and logprobs); drafts "
                    f"{drafted:.0f}, accepted {accepted:.0f}")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            proc.kill()


def run_requests(checks, base, grpc_port, cmd, args):
    model = json.loads(http(base, "/v1/models")[1])["data"][0]["id"]
    bias = {str(i): -100 for i in special_ids(args.model)}
    before = parse_metrics(http(base, "/metrics")[1])
    common = {"model": model, "max_tokens": MAX_TOKENS, "ignore_eos": True, "logit_bias": bias}
    checks.run("streaming completion", lambda: check_stream(*sse_events(
        base, "/v1/completions", dict(common, prompt="The capital of France is", stream=True,
                                      stream_options={"include_usage": True})), "completion"))
    checks.run("streaming chat", lambda: check_stream(*sse_events(
        base, "/v1/chat/completions",
        dict(common, messages=[{"role": "user", "content": "Say hello."}], stream=True,
             stream_options={"include_usage": True})), "chat"))

    def complete(biased=True, **extra):
        body = dict(common, prompt="Once upon a time", **extra)
        if not biased:
            del body["logit_bias"]
        return json.loads(http(base, "/v1/completions", body)[1])

    def greedy():  # unbiased: logprobs are the model's, so the greedy token is their top one
        a = complete(False, temperature=0, logprobs=2)
        b = complete(False, temperature=0, logprobs=2)
        ta, tb = a["choices"][0]["text"], b["choices"][0]["text"]
        lp = a["choices"][0].get("logprobs") or {}
        chosen, tops = lp.get("token_logprobs") or [], lp.get("top_logprobs") or []
        best_ok = len(chosen) == MAX_TOKENS and all(
            c is not None and c <= 1e-6 and (not t or max(t.values()) <= c + 1e-3)
            for c, t in zip(chosen, tops))
        ok = (ta == tb and a["choices"][0]["finish_reason"] == "length" and
              a["usage"]["completion_tokens"] == MAX_TOKENS and best_ok)
        return ok, (f"text {ta[:60]!r} twice: {ta == tb}; {len(chosen)} logprobs, chosen is the "
                    f"top one: {best_ok}")
    checks.run("greedy completion (twice, logprobs)", greedy)

    def seeded():
        kw = dict(temperature=0.8, top_p=0.9, top_k=40, seed=1234)
        ta, tb = complete(**kw)["choices"][0]["text"], complete(**kw)["choices"][0]["text"]
        return ta == tb and bool(ta), f"text {ta[:60]!r} twice: {ta == tb}"
    checks.run("seeded sampling (twice)", seeded)

    def bench(name, target, n, conc):
        out = os.path.join(args.out, f"bench-{name}.json")
        argv = cmd + ["bench", *target, "--model", model, "--num-requests", str(n),
                      "--max-concurrency", str(conc), "--input-len", "64", "--output-len", "32",
                      "--no-progress", "--timeout", "60", "--json-out", out]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        rep = json.load(open(out)) if os.path.exists(out) else {}
        ok = p.returncode == 0 and rep.get("completed") == n and not rep.get("failed")
        return ok, (f"exit {p.returncode}, completed {rep.get('completed')}/{n}, failed "
                    f"{rep.get('failed')}, output {rep.get('output_throughput', 0):.0f} tok/s, "
                    f"TTFT median {(rep.get('ttft_ms') or {}).get('median', 0):.1f} ms, "
                    f"TPOT median {(rep.get('tpot_ms') or {}).get('median', 0):.2f} ms"
                    + ("" if ok else f"; stderr {p.stderr[-200:]!r}"))
    checks.run("gRPC Generate (llmserve bench --grpc)",
               lambda: bench("grpc", ["--grpc", f"127.0.0.1:{grpc_port}"], 8, 4))
    checks.run("HTTP serving benchmark, concurrency 16",
               lambda: bench("http", ["--url", base], 64, 16))

    def metrics_moved():
        after = parse_metrics(http(base, "/metrics")[1])

        def delta(name, **labels):
            return metric_sum(after, name, **labels) - metric_sum(before, name, **labels)
        http_done = sum(v for (n, labels), v in after.items()
                        if n == "llmserve_http_requests_total" and
                        "completions" in dict(labels).get("route", "")) - \
            sum(v for (n, labels), v in before.items()
                if n == "llmserve_http_requests_total" and
                "completions" in dict(labels).get("route", ""))
        grpc_done = delta("llmserve_grpc_requests_total", method="Generate")
        gen = delta("llmserve_generation_tokens_total")
        finished = delta("llmserve_requests_finished_total")
        want_http, want_grpc = 6 + 64, 8
        ok = http_done >= want_http and grpc_done >= want_grpc and finished >= want_http + \
            want_grpc and gen >= 6 * MAX_TOKENS + (64 + 8) * 32
        return ok, (f"HTTP completions requests +{http_done:.0f} (>= {want_http}), gRPC Generate "
                    f"+{grpc_done:.0f} (>= {want_grpc}), finished +{finished:.0f}, generation "
                    f"tokens +{gen:.0f}")
    checks.run("metrics counters moved", metrics_moved)


def finish(checks, out, proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    t = time.time()
    try:
        code = proc.wait(timeout=40)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
    log_text = open(os.path.join(out, "daemon-serve.log"), errors="replace").read()
    checks.add("clean exit on SIGTERM", code == 0 and "llmserve stopped" in log_text,
               f"exit code {code} after {time.time() - t:.1f} s")
    with open(os.path.join(out, "daemon.json"), "w", encoding="utf-8") as f:
        json.dump({"checks": checks.items, "passed": checks.passed()}, f, indent=1)
    return 0 if checks.passed() else 1


if __name__ == "__main__":
    sys.exit(main())
