#!/usr/bin/env python3
"""Speculative decoding benchmark: llmserve's methods (none / ngram / draft), and llmserve vs
llama.cpp's llama-server through HTTP, on the prompt set bench/spec/prompts.jsonl (24 input-
grounded tasks whose answer copies the input, 10 open-ended ones; see make_prompts.py).

engine mode: one stream, no HTTP. For every round (--rounds, default 3), sampling setting
(greedy = temperature 0; T=0.7 seed 1234) and method (the order rotates each round so machine
noise hits all alike) it runs

    build/llmserve generate --model models/SmolLM2-135M-Instruct.Q4_1.gguf \\
        --prompts-file FILE --sequential --threads 2 --speculative-method METHOD \\
        [--speculative.num-tokens K] [--speculative.draft-model PATH]

(the speculative flags are left out for method none) and reads one JSON line per prompt: index,
text, token_ids, finish_reason, usage, ttft_ms, e2e_ms and spec {draft_tokens, accepted_tokens,
verify_steps}. Per prompt: decode tok/s = (completion_tokens - 1) / ((e2e_ms - ttft_ms) / 1000),
acceptance = accepted / draft, mean accepted length = accepted / verify_steps. It reports
medians per kind (grounded / open), the speed-up vs none on the same prompts in the same round,
and whether every prompt's token_ids equal none's (mismatches are printed loudly).

    python3 bench/spec/spec_bench.py engine --methods none,ngram,draft --num-tokens 4 \\
        --draft-model models/SmolLM2-135M-Instruct.Q4_1.gguf --rounds 3 --out /tmp/spec_engine.md

daemon mode (spec_daemon.py): llmserve serve and llama-server, each with speculation off and
n-gram on, streamed chat completions at concurrency 1, 4, 16:

    python3 bench/spec/spec_bench.py daemon --engines llmserve,llamacpp --concurrency 1,4,16 \\
        --rounds 1 --out /tmp/spec_daemon.md
    python3 bench/spec/spec_bench.py daemon --engines llamacpp --concurrency 1,4 --out /tmp/d.md

Both modes write the markdown report to --out and the raw numbers to --out with .json added.
Plain python3, standard library only.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_MODEL = "models/SmolLM2-135M-Instruct.Q4_1.gguf"
SAMPLINGS = {"greedy": {"temperature": 0.0, "seed": 1234},
             "t0.7": {"temperature": 0.7, "seed": 1234}}


# ------------------------------------------------------------------------------------------------
# Shared helpers (also used by spec_daemon.py)
# ------------------------------------------------------------------------------------------------
def load_prompts(path, kinds=None, limit=0):
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
    if kinds:
        rows = [r for r in rows if r["kind"] in kinds]
    if limit:
        # Keep both kinds represented: take the first `limit` of each kind.
        seen, kept = {}, []
        for r in rows:
            seen[r["kind"]] = seen.get(r["kind"], 0) + 1
            if seen[r["kind"]] <= limit:
                kept.append(r)
        rows = kept
    return rows


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(x, nd=1):
    if x is None:
        return "-"
    return f"{x:.{nd}f}"


def machine_facts():
    facts = {"nproc": os.cpu_count(), "platform": platform.platform(),
             "python": platform.python_version(), "loadavg": list(os.getloadavg())}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    facts["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return facts


def loadavg_str():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def shell_join(argv):
    import shlex
    return " ".join(shlex.quote(str(a)) for a in argv)


def write_outputs(out, markdown, raw):
    print(markdown)
    if not out:
        return
    with open(out, "w", encoding="utf-8") as f:
        f.write(markdown)
    with open(out + ".json", "w", encoding="utf-8") as f:
        json.dump(raw, f, indent=1)
    print(f"wrote {out} and {out}.json", file=sys.stderr)


def cpu_jiffies():
    """(busy, total) jiffies of the whole machine from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return sum(v) - idle, sum(v)


def proc_cpu_s(pid):
    """utime + stime of a running process in seconds (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def wait_idle(max_wait_s, threshold=0.25):
    """Waits (up to max_wait_s) until the machine's CPU use over 1 s is below threshold of all
    cores, e.g. while someone else's compile runs. Returns (seconds waited, last busy fraction)."""
    t0, busy = time.time(), 1.0
    while True:
        b0, t_0 = cpu_jiffies()
        time.sleep(1.0)
        b1, t_1 = cpu_jiffies()
        busy = (b1 - b0) / max(1, t_1 - t_0)
        if busy < threshold or time.time() - t0 >= max_wait_s:
            return time.time() - t0, busy


class CpuMeter:
    """CPU seconds the machine spent during a measurement, and the part not spent by us
    (this process, its finished children, and the given pids): `foreign_cpu_s` is the noise."""

    def __init__(self, pids=()):
        self.pids = list(pids)
        self.b0 = cpu_jiffies()[0]
        self.own0 = self._own()

    def _own(self):
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system + sum(
            proc_cpu_s(p) for p in self.pids)

    def stop(self):
        busy = (cpu_jiffies()[0] - self.b0) / os.sysconf("SC_CLK_TCK")
        own = self._own() - self.own0
        return {"machine_cpu_s": busy, "own_cpu_s": own, "foreign_cpu_s": max(0.0, busy - own)}


def noisy(args, cpu, attempt):
    """True (and a note) when other processes took more than --max-foreign of the machine's CPU
    (and over 1 CPU s) during a run and a retry is left."""
    bad = cpu["foreign_cpu_s"] > max(args.max_foreign * cpu["machine_cpu_s"], 1.0)
    if bad:
        print(f"  noisy run: other processes used {cpu['foreign_cpu_s']:.1f} of "
              f"{cpu['machine_cpu_s']:.1f} CPU s" + ("; retrying" if attempt < args.retries
                                                     else "; keeping it"), file=sys.stderr)
    return bad and attempt < args.retries


def loud(msg):
    bar = "!" * 100
    print(f"\n{bar}\n{msg}\n{bar}\n", file=sys.stderr)


# ------------------------------------------------------------------------------------------------
# Engine mode
# ------------------------------------------------------------------------------------------------
def generate_help(binary):
    p = subprocess.run([binary, "generate", "--help"], capture_output=True, text=True)
    return p.stdout + p.stderr


def generate_argv(args, method, prompts_file, help_text):
    argv = [args.llmserve, "generate", "--model", args.model, "--prompts-file", prompts_file]
    if "--sequential" in help_text:
        argv.append("--sequential")
    argv += ["--threads", str(args.threads)]
    if method != "none":
        argv += ["--speculative-method", method, "--speculative.num-tokens", str(args.num_tokens)]
        if method == "draft":
            argv += ["--speculative.draft-model", args.draft_model]
    return argv + args.extra_arg


def run_generate(args, method, sampling, prompts, help_text):
    """Runs all prompts once through `llmserve generate`; returns (argv, [result per prompt])."""
    s = SAMPLINGS[sampling]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for p in prompts:
            f.write(json.dumps({"id": p["id"], "messages": p["messages"],
                                "max_tokens": p["max_tokens"], "temperature": s["temperature"],
                                "seed": s["seed"]}) + "\n")
        path = f.name
    argv = generate_argv(args, method, path, help_text)
    waited, busy = wait_idle(args.wait_idle) if args.wait_idle > 0 else (0.0, None)
    meter = CpuMeter()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    finally:
        os.unlink(path)
    cpu = dict(meter.stop(), idle_wait_s=waited, busy_before=busy)
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.strip().startswith("{")]
    if p.returncode != 0 or len(lines) != len(prompts):
        loud(f"llmserve generate failed (rc={p.returncode}, {len(lines)}/{len(prompts)} lines): "
             f"{shell_join(argv)}\n{p.stderr[-3000:]}")
        if not lines:
            sys.exit(1)
    results = []
    by_index = {ln.get("index", i): ln for i, ln in enumerate(lines)}
    for i, prompt in enumerate(prompts):
        ln = by_index.get(i, {"error": "missing output line"})
        results.append(per_prompt(prompt, ln))
    return [("FILE.jsonl" if a == path else a) for a in argv], results, cpu


def per_prompt(prompt, ln):
    r = {"id": prompt["id"], "kind": prompt["kind"]}
    if "error" in ln:
        r["error"] = ln["error"]
        return r
    ct = ln.get("usage", {}).get("completion_tokens", len(ln.get("token_ids", [])))
    ttft, e2e = ln.get("ttft_ms"), ln.get("e2e_ms")
    dec = None
    if ct > 1 and ttft is not None and e2e is not None and e2e > ttft:
        dec = (ct - 1) / ((e2e - ttft) / 1000.0)
    spec = ln.get("spec") or {}
    draft, acc, steps = (spec.get("draft_tokens"), spec.get("accepted_tokens"),
                         spec.get("verify_steps"))
    r.update({"prompt_tokens": ln.get("usage", {}).get("prompt_tokens"),
              "completion_tokens": ct, "ttft_ms": ttft, "e2e_ms": e2e, "decode_tok_s": dec,
              "finish_reason": ln.get("finish_reason"), "token_ids": ln.get("token_ids"),
              "draft_tokens": draft, "accepted_tokens": acc, "verify_steps": steps,
              "acceptance": ratio(acc, draft), "mean_accepted_len": ratio(acc, steps)})
    return r


def engine_mode(args):
    prompts = load_prompts(args.prompts, args.kinds, args.limit)
    methods = args.methods
    if "draft" in methods and not args.draft_model:
        print("no --draft-model given: dropping method draft", file=sys.stderr)
        methods = [m for m in methods if m != "draft"]
    if "none" not in methods:
        methods = ["none"] + methods
    help_text = generate_help(args.llmserve)
    if "--sequential" not in help_text:
        loud("this llmserve has no --sequential: prompts run CONCURRENTLY, so ttft/e2e and "
             "decode tok/s are not single-stream numbers")
    if any(m != "none" for m in methods) and "--speculative-method" not in help_text:
        sys.exit("this llmserve has no --speculative-method; run with --methods none or "
                 "rebuild it with the speculative engine")
    facts = machine_facts()
    load_before = loadavg_str()
    runs, commands = [], {}
    for rnd in range(args.rounds):
        order = methods[rnd % len(methods):] + methods[:rnd % len(methods)]
        for sampling in args.samplings:
            for method in order:
                t0 = time.time()
                for attempt in range(args.retries + 1):
                    argv, res, cpu = run_generate(args, method, sampling, prompts, help_text)
                    if not noisy(args, cpu, attempt):
                        break
                commands[method] = shell_join(argv)
                runs.append({"round": rnd, "sampling": sampling, "method": method,
                             "wall_s": time.time() - t0, "cpu": cpu, "attempts": attempt + 1,
                             "results": res})
                toks = sum(r.get("completion_tokens", 0) for r in res)
                print(f"round {rnd} {sampling:6s} {method:6s} {toks} tokens in "
                      f"{time.time() - t0:.1f}s, foreign CPU {cpu['foreign_cpu_s']:.1f}s "
                      f"(load {loadavg_str()})", file=sys.stderr)
    summary, mismatches = summarize_engine(runs, methods, args.samplings)
    md = engine_report(args, facts, load_before, loadavg_str(), commands, summary, mismatches,
                       len(prompts))
    md += noise_line(runs)
    for r in runs:  # keep the raw JSON small (mismatches keep the first differing position)
        for x in r["results"]:
            x.pop("token_ids", None)
    write_outputs(args.out, md, {"mode": "engine", "facts": facts, "load_before": load_before,
                                 "load_after": loadavg_str(), "commands": commands,
                                 "summary": summary, "mismatches": mismatches, "runs": runs})
    if mismatches:
        loud(f"{len(mismatches)} token_ids MISMATCHES vs method none (see report)")


def summarize_engine(runs, methods, samplings):
    idx = {(r["round"], r["sampling"], r["method"]): r["results"] for r in runs}
    rounds = sorted({r["round"] for r in runs})
    summary, mismatches = [], []
    for sampling in samplings:
        for method in methods:
            for kind in ("grounded", "open", "all"):
                dec, spd, acc, mal, ttft, e2e = [], [], [], [], [], []
                sum_d = sum_a = sum_v = 0
                for rnd in rounds:
                    base = idx[(rnd, sampling, "none")]
                    for r, b in zip(idx[(rnd, sampling, method)], base):
                        if kind != "all" and r["kind"] != kind:
                            continue
                        if "error" in r:
                            continue
                        dec.append(r["decode_tok_s"])
                        ttft.append(r["ttft_ms"])
                        e2e.append(r["e2e_ms"])
                        spd.append(ratio(r["decode_tok_s"], b.get("decode_tok_s")))
                        acc.append(r["acceptance"])
                        mal.append(r["mean_accepted_len"])
                        sum_d += r["draft_tokens"] or 0
                        sum_a += r["accepted_tokens"] or 0
                        sum_v += r["verify_steps"] or 0
                        if kind != "all" or r.get("token_ids") == b.get("token_ids"):
                            continue
                        if method != "none":
                            mismatches.append(mismatch(rnd, sampling, method, r, b))
                    # none against its own first round: is the baseline itself deterministic?
                    if method == "none" and kind == "all" and rnd != rounds[0]:
                        first = idx[(rounds[0], sampling, "none")]
                        for r, b in zip(base, first):
                            if "error" not in r and r.get("token_ids") != b.get("token_ids"):
                                mismatches.append(mismatch(rnd, sampling, "none(round 0)", r, b))
                summary.append({"sampling": sampling, "method": method, "kind": kind,
                                "n": len(dec), "decode_tok_s": median(dec),
                                "speedup_vs_none": median(spd), "ttft_ms": median(ttft),
                                "e2e_ms": median(e2e), "acceptance": median(acc),
                                "mean_accepted_len": median(mal),
                                "pooled_acceptance": ratio(sum_a, sum_d),
                                "pooled_mean_accepted_len": ratio(sum_a, sum_v)})
    return summary, mismatches


def mismatch(rnd, sampling, method, r, b):
    a, c = r.get("token_ids") or [], b.get("token_ids") or []
    first = next((i for i, (x, y) in enumerate(zip(a, c)) if x != y), min(len(a), len(c)))
    m = {"round": rnd, "sampling": sampling, "method": method, "id": r["id"],
         "first_diff": first, "len": len(a), "len_none": len(c)}
    loud(f"TOKEN MISMATCH: {method} vs none, {sampling}, round {rnd}, prompt {r['id']}: first "
         f"difference at token {first} (lengths {len(a)} vs {len(c)})")
    return m


def engine_report(args, facts, load_before, load_after, commands, summary, mismatches, n):
    out = ["# Speculative decoding, engine mode (single stream, `llmserve generate`)", "",
           f"- machine: {facts.get('cpu', '?')}, nproc {facts['nproc']}, {facts['platform']}",
           f"- load average before: {load_before}; after: {load_after}",
           f"- {n} prompts from `{os.path.relpath(args.prompts, ROOT)}`, {args.rounds} rounds, "
           f"method order rotated each round; K = {args.num_tokens}",
           "- decode tok/s = (completion_tokens - 1) / (e2e - ttft); speed-up = median over "
           "prompts x rounds of (method / none, same prompt, same round)", "", "Commands:", ""]
    out += [f"    {c}" for c in commands.values()]
    out += ["", "| sampling | method | kind | n | decode tok/s | speed-up vs none | accept rate "
            "(median / pooled) | mean accepted len (median / pooled) | TTFT ms | e2e ms |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for s in summary:
        out.append(f"| {s['sampling']} | {s['method']} | {s['kind']} | {s['n']} | "
                   f"{fmt(s['decode_tok_s'])} | {fmt(s['speedup_vs_none'], 2)} | "
                   f"{fmt(s['acceptance'], 2)} / {fmt(s['pooled_acceptance'], 2)} | "
                   f"{fmt(s['mean_accepted_len'], 2)} / {fmt(s['pooled_mean_accepted_len'], 2)} | "
                   f"{fmt(s['ttft_ms'])} | {fmt(s['e2e_ms'])} |")
    out += ["", "## token_ids identical to method none", ""]
    if not mismatches:
        out.append("All prompts, all methods, all rounds: identical.")
    else:
        out.append(f"**{len(mismatches)} MISMATCHES**:")
        out += [f"- {m['method']} {m['sampling']} round {m['round']} `{m['id']}`: first diff at "
                f"token {m['first_diff']} (len {m['len']} vs {m['len_none']})" for m in mismatches]
    return "\n".join(out) + "\n"


def noise_line(runs):
    f = [r["cpu"]["foreign_cpu_s"] for r in runs]
    m = [r["cpu"]["machine_cpu_s"] for r in runs]
    w = sum(r["cpu"]["idle_wait_s"] or 0 for r in runs)
    reruns = sum(r.get("attempts", 1) - 1 for r in runs)
    return (f"\nNoise: CPU seconds used by other processes during the kept runs: "
            f"{sum(f):.1f} of {sum(m):.1f} in all (worst run {max(f):.1f}); {reruns} noisy "
            f"run(s) were rerun; waited {w:.0f} s for the machine to go idle before runs.\n")


# ------------------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--prompts", default=os.path.join(HERE, "prompts.jsonl"))
    common.add_argument("--model", default=DEFAULT_MODEL)
    common.add_argument("--llmserve", default="build/llmserve")
    common.add_argument("--threads", type=int, default=2)
    common.add_argument("--rounds", type=int, default=3)
    common.add_argument("--num-tokens", type=int, default=4, help="draft length K")
    common.add_argument("--samplings", default="greedy,t0.7",
                        help="comma list of: " + ",".join(SAMPLINGS))
    common.add_argument("--kinds", default="", help="only these kinds (grounded,open)")
    common.add_argument("--limit", type=int, default=0, help="first N prompts of each kind")
    common.add_argument("--out", default="", help="markdown report; raw JSON goes to OUT.json")
    common.add_argument("--wait-idle", type=float, default=300,
                        help="before each run wait up to this many s for other CPU use to stop")
    common.add_argument("--max-foreign", type=float, default=0.05,
                        help="rerun a run when other processes took more than this share of CPU")
    common.add_argument("--retries", type=int, default=3, help="most reruns of a noisy run")

    e = sub.add_parser("engine", parents=[common], help="llmserve generate, single stream")
    e.add_argument("--methods", default="none,ngram,draft")
    e.add_argument("--draft-model", default="", help="GGUF for method draft")
    e.add_argument("--extra-arg", action="append", default=[],
                   help="extra argument for llmserve generate (repeatable)")

    d = sub.add_parser("daemon", parents=[common], help="HTTP: llmserve serve vs llama-server")
    d.add_argument("--engines", default="llmserve,llamacpp")
    d.add_argument("--llamacpp", default="build-llamacpp/build/bin/llama-server")
    d.add_argument("--concurrency", default="1,4,16")
    d.add_argument("--llmserve-methods", default="none,ngram")
    d.add_argument("--llamacpp-methods", default="none,ngram-simple")
    d.add_argument("--ctx", type=int, default=4096, help="llama-server -c (total, all slots)")
    d.add_argument("--prefix-cache", action="store_true",
                   help="leave prompt / prefix caching on in both servers (default: off)")
    d.add_argument("--timeout", type=float, default=600, help="seconds per request")
    d.add_argument("--llmserve-arg", action="append", default=[],
                   help="extra argument for llmserve serve (repeatable)")
    d.add_argument("--llamacpp-arg", action="append", default=[],
                   help="extra argument for llama-server (repeatable)")
    args = ap.parse_args()

    os.chdir(ROOT)
    args.samplings = [s for s in args.samplings.split(",") if s]
    bad = [s for s in args.samplings if s not in SAMPLINGS]
    if bad:
        sys.exit(f"unknown sampling {bad}")
    args.kinds = [k for k in args.kinds.split(",") if k]
    if args.mode == "engine":
        args.methods = [m for m in args.methods.split(",") if m]
        engine_mode(args)
    else:
        sys.path.insert(0, HERE)
        import spec_daemon
        spec_daemon.daemon_mode(args)


if __name__ == "__main__":
    main()
