#!/usr/bin/env python3
"""Two or more llmserve binaries side by side on n-gram speculation, one stream (engine mode):
every round runs `llmserve generate --prompts-file --sequential --threads 2` for each binary with
speculation off and with --speculative-method ngram --speculative.num-tokens 4 (greedy), the
order rotated each round, and reports per binary the median over prompts and rounds of the
per-prompt decode speed-up ngram / none (same binary, same round), the drafts accepted, and each
start-up's logged check-cost calibration. Token ids with speculation must equal those without.

    python3 bench/spec/spec_ab.py main=/tmp/llmserve-main,branch=build/llmserve 4 8 grounded

Arguments: NAME=BINARY[,...] ROUNDS LIMIT (first N prompts of each kind, 0 = all) [KINDS]
[EXTRA generate flags, one string]. Plain python3, standard library only.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT + "/bench/spec")
from spec_bench import load_prompts
bins = dict(x.split("=", 1) for x in sys.argv[1].split(","))
rounds = int(sys.argv[2]); limit = int(sys.argv[3]); kinds = sys.argv[4] if len(sys.argv) > 4 else "grounded"
extra = sys.argv[5].split() if len(sys.argv) > 5 else []
prompts = load_prompts(ROOT + "/bench/spec/prompts.jsonl", kinds.split(","), limit)
f = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
for p in prompts:
    f.write(json.dumps({"id": p["id"], "messages": p["messages"], "max_tokens": p["max_tokens"],
                        "temperature": 0.0, "seed": 1234}) + "\n")
f.close()
configs = [(b, m) for b in bins for m in ("none", "ngram")]
res = {}  # (b,m) -> list of rounds -> list of per-prompt decode tok/s
calib = {}
for r in range(rounds):
    order = configs[r % len(configs):] + configs[:r % len(configs)]
    for b, m in order:
        argv = [bins[b], "generate", "--model", ROOT + "/models/SmolLM2-135M-Instruct.Q4_1.gguf",
                "--prompts-file", f.name, "--sequential", "--threads", "2"] + extra
        if m != "none":
            argv += ["--speculative-method", m, "--speculative.num-tokens", "4"]
        p = subprocess.run(argv, capture_output=True, text=True)
        for ln in p.stderr.splitlines():
            if "speculative:" in ln: calib.setdefault(b, []).append(ln.split("speculative:")[1].strip())
        lines = [json.loads(x) for x in p.stdout.splitlines() if x.strip().startswith("{")]
        toks = []; acc = [0, 0, 0]; ids = []
        for ln in lines:
            ct = ln["usage"]["completion_tokens"]
            toks.append((ct - 1) / ((ln["e2e_ms"] - ln["ttft_ms"]) / 1000.0))
            s = ln.get("spec") or {}
            acc[0] += s.get("draft_tokens", 0); acc[1] += s.get("accepted_tokens", 0); acc[2] += s.get("verify_steps", 0)
            ids.append(ln["token_ids"])
        res.setdefault((b, m), []).append((toks, acc, ids))
        print(f"round {r} {b} {m}: median {statistics.median(toks):.1f} tok/s drafts {acc[0]} acc {acc[1]} checks {acc[2]}", flush=True)
print()
for b in bins:
    sp = []
    for r in range(rounds):
        n, g = res[(b, "none")][r][0], res[(b, "ngram")][r][0]
        sp.append(statistics.median([y / x for x, y in zip(n, g)]))
        if res[(b, "none")][r][2] != res[(b, "ngram")][r][2]: print("MISMATCH token ids", b, r)
    allsp = [y / x for r in range(rounds) for x, y in zip(res[(b, "none")][r][0], res[(b, "ngram")][r][0])]
    none_med = statistics.median([t for r in range(rounds) for t in res[(b, 'none')][r][0]])
    ng_med = statistics.median([t for r in range(rounds) for t in res[(b, 'ngram')][r][0]])
    a = [sum(res[(b, 'ngram')][r][1][i] for r in range(rounds)) for i in range(3)]
    print(f"{b}: speed-up median per round {['%.2f' % x for x in sp]}, median of all {statistics.median(allsp):.2f}; "
          f"none {none_med:.1f} ngram {ng_med:.1f} tok/s; drafts {a[0]} accepted {a[1]} ({a[1]/max(a[0],1):.2f}) checks {a[2]}")
for b, c in calib.items():  # every start-up
    print(b, "calibration:", *[x for x in c if "check" in x and "costs" in x], sep="\n  ")
