#!/usr/bin/env python3
"""What n-gram speculation can give at a given check cost: replays the token sequences of the
prompt set (bench/spec/prompts.jsonl) and counts decode-step equivalents for

  none    one step per token;
  gate    the engine's policy for n-gram drafts: ngram_match (engine/spec/ngram_proposer.cpp)
          proposes, then DraftGate::num_drafts_for_match (engine/spec/draft_gate.cpp) keeps the d
          maximising expected tokens / cost, draft j taken as accepted with chance
          L' / (L' + 2), L' = matched suffix length + j, shifted in log-odds by the sequence's
          outcomes; a probe every 16 idle steps;
  gate-running  the gate before it (and the draft model's): one running acceptance p per
          sequence, d maximising (1 + p + ... + p^d) / cost(d), asked before proposing;
  oracle  the same proposals, drafting exactly the tokens that will be accepted (an upper bound
          no gate can pass with this proposer).

A check of d drafts costs 1 + cost * d steps, or with --tables the measured cost of a check of
d drafts (the engine's start-up calibration, engine/spec/verify_cost.cpp, logs that table):
`gate` then drafts by the table, `gate-linear` by the one per-draft cost of a full check,
(table[k] - 1) / k (the calibration before the table), both paying the table's costs. Speculation leaves the output unchanged (the
engine's identity tests), so the sequences made once with speculation off are what every policy
sees. The speed-up per prompt is tokens / steps; the report gives medians per kind and sampling.

    python3 bench/spec/gate_bound.py --llmserve build-cpu/llmserve --costs 0.17,0.24 \\
        --num-tokens 4,8,16 [--sequences /tmp/seqs.json]
    python3 bench/spec/gate_bound.py --sequences /tmp/seqs.json --tables 1.15,1.3,1.45,2.0

--sequences caches the prompt and output ids (made with `llmserve chat-template`, `tokenize` and
`generate --sequential`, greedy and T 0.7 seed 1234) so later runs only replay.
Plain python3, standard library only.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

from spec_bench import load_prompts

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SAMPLINGS = {"greedy": 0.0, "t0.7": 0.7}
SEED = 1234


def collect(binary, model, prompts):
    seqs = {}
    for p in prompts:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(p["messages"], f)
        text = subprocess.run([binary, "chat-template", "--model", model, "--messages", f.name,
                               "--add-generation-prompt"], capture_output=True, text=True,
                              check=True).stdout
        os.unlink(f.name)
        ids = json.loads(subprocess.run([binary, "tokenize", "--model", model, "--text", text,
                                         "--no-bos"], capture_output=True, text=True,
                                        check=True).stdout)["ids"]
        seqs[p["id"]] = {"kind": p["kind"], "max_tokens": p["max_tokens"], "prompt_ids": ids}
    for name, temperature in SAMPLINGS.items():
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            for p in prompts:
                f.write(json.dumps({"messages": p["messages"], "max_tokens": p["max_tokens"],
                                    "temperature": temperature, "seed": SEED}) + "\n")
        r = subprocess.run([binary, "generate", "--model", model, "--prompts-file", f.name,
                            "--sequential", "--threads", "2"], capture_output=True, text=True)
        os.unlink(f.name)
        if r.returncode != 0:
            sys.exit(f"llmserve generate failed: {r.stderr[-2000:]}")
        lines = {ln["index"]: ln for ln in map(json.loads, r.stdout.splitlines())}
        for i, p in enumerate(prompts):
            ln = lines[i]
            if ln["usage"]["prompt_tokens"] != len(seqs[p["id"]]["prompt_ids"]):
                sys.exit(f"{p['id']}: the rendered prompt's ids differ from generate's")
            seqs[p["id"]][name] = ln["token_ids"]
    return seqs


def ngram_match(tokens, ngram_min, ngram_max, max_drafts):
    """engine/spec/ngram_proposer.cpp: the longest suffix (<= ngram_max) seen before, most recent
    occurrence first; the tokens that followed it, and the suffix length."""
    n = len(tokens)
    if n < 2:
        return [], 0
    last, best_len, best_end = tokens[-1], 0, -1
    for end in range(n - 2, -1, -1):
        if tokens[end] != last:
            continue
        length = 1
        while length < ngram_max and end - length >= 0 and \
                tokens[end - length] == tokens[n - 1 - length]:
            length += 1
        if length > best_len:
            best_len, best_end = length, end
            if length == ngram_max:
                break
    if best_len < ngram_min:
        return [], 0
    return tokens[best_end + 1:best_end + 1 + max_drafts], best_len


def check_cost(cost, d):
    """A check of d drafts in decode steps: 1 + cost * d, or cost[d] for a table (cost[0] = 1;
    beyond it the last increment repeats, as DraftGate::check_cost)."""
    if not isinstance(cost, list):
        return 1.0 + cost * d
    if d < len(cost):
        return cost[d]
    step = max(cost[-1] - cost[-2], 0.0) if len(cost) >= 2 else 0.0
    return cost[-1] + step * (d - len(cost) + 1)


def best_drafts(p, cost, max_drafts):
    best, best_rate, tokens, pk = 0, 1.0, 1.0, 1.0
    for d in range(1, max_drafts + 1):
        pk *= p
        tokens += pk
        rate = tokens / check_cost(cost, d)
        if rate > best_rate:
            best_rate, best = rate, d
    return best


class DraftGate:
    """engine/spec/draft_gate.cpp."""

    def __init__(self, cost):
        self.cost, self.p, self.idle, self.bias, self.last_match = cost, 0.6, 0, 0.0, 0

    def after_idle_step(self, d):
        if d > 0:
            self.idle = 0
            return d
        self.idle += 1
        if self.idle < 16:
            return 0
        self.idle = 0
        return 1

    def num_drafts(self, max_drafts):
        self.last_match = 0
        return self.after_idle_step(best_drafts(self.p, self.cost, max_drafts))

    def match_acceptance(self, length):
        odds = max(length, 1) / 2.0 * math.exp(self.bias)
        return odds / (1.0 + odds)

    def num_drafts_for_match(self, max_drafts, match_length):
        self.last_match = max(match_length, 1)
        best, tokens, chain = 0, 1.0, 1.0
        best_rate = 1.0 / check_cost(self.cost, 0)
        for d in range(1, max_drafts + 1):
            chain *= self.match_acceptance(self.last_match + d - 1)
            tokens += chain
            rate = tokens / check_cost(self.cost, d)
            if rate > best_rate:
                best_rate, best = rate, d
        return self.after_idle_step(best)

    def observe(self, drafted, accepted):
        if self.last_match > 0:
            shift = sum(0.1 * (1.0 - self.match_acceptance(self.last_match + j))
                        for j in range(accepted))
            if accepted < drafted:
                shift -= 0.1 * self.match_acceptance(self.last_match + accepted)
            self.bias = min(max(self.bias + shift, -3.0), 3.0)
        for _ in range(accepted):
            self.p += 0.15 * (1.0 - self.p)
        if accepted < drafted:
            self.p -= 0.15 * self.p


def replay(seq, samp, policy, cost, k, ngram_min=1, ngram_max=4):
    """Decode-step equivalents to produce the output after the prompt. As in
    engine/step_loop.cpp, the gate is asked before the proposer, for at most
    min(k, max_tokens - outputs - 1) drafts. cost: per draft, or a table (check_cost)."""
    out = seq[samp]
    gate_cost = cost
    if policy == "gate-linear":
        gate_cost = (check_cost(cost, k) - 1.0) / k
        policy = "gate-running"
    gate, hist, i, steps = DraftGate(gate_cost), list(seq["prompt_ids"]), 0, 0.0
    while i < len(out):
        room = min(k, seq["max_tokens"] - i - 1)
        cand, length = ngram_match(hist, ngram_min, ngram_max, room) if room > 0 else ([], 0)
        right = 0  # drafts that would be accepted (none past the output's end)
        while right < len(cand) and i + right + 1 < len(out) and cand[right] == out[i + right]:
            right += 1
        if policy == "none":
            d = 0
        elif policy == "oracle":
            d = right
        elif policy == "gate-running":
            d = min(gate.num_drafts(room) if room > 0 else 0, len(cand))
        else:
            d = gate.num_drafts_for_match(len(cand), length) if cand else 0
        accepted = min(d, right)
        if policy != "oracle" and d > 0:
            gate.observe(d, accepted)
        steps += check_cost(cost, d)
        hist.extend(out[i:i + accepted + 1])
        i += accepted + 1
    return steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llmserve", default=os.path.join(ROOT, "build", "llmserve"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models",
                                                    "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--prompts", default=os.path.join(HERE, "prompts.jsonl"))
    ap.add_argument("--sequences", help="cache of the ids (read if present, else written)")
    ap.add_argument("--costs", default="0.17,0.24")
    ap.add_argument("--num-tokens", default="4,8,16")
    ap.add_argument("--tables", default="",
                    help="check-cost tables instead of --costs: ';'-separated, each the cost in "
                         "decode steps of a check of 1, 2, ... drafts, comma-separated")
    args = ap.parse_args()
    if args.sequences and os.path.exists(args.sequences):
        with open(args.sequences, encoding="utf-8") as f:
            seqs = json.load(f)
    else:
        seqs = collect(args.llmserve, args.model, load_prompts(args.prompts))
        if args.sequences:
            with open(args.sequences, "w", encoding="utf-8") as f:
                json.dump(seqs, f)
    kinds = sorted({s["kind"] for s in seqs.values()})
    cols = [(k, s) for k in kinds for s in SAMPLINGS]
    print("| cost per draft | num_tokens | policy | " +
          " | ".join(f"{k} {s}" for k, s in cols) + " |")
    print("|---|---|---|" + "---|" * len(cols))
    costs = [float(c) for c in args.costs.split(",")]
    policies = ("gate-running", "gate", "oracle")
    if args.tables:
        costs = [[1.0] + [float(c) for c in t.split(",")] for t in args.tables.split(";")]
        policies = ("gate-linear", "gate-running", "gate", "oracle")
    for cost in costs:
        for k in map(int, args.num_tokens.split(",")):
            for policy in policies:
                cells = []
                for kind, samp in cols:
                    ratios = [replay(s, samp, "none", cost, k) / replay(s, samp, policy, cost, k)
                              for s in seqs.values() if s["kind"] == kind]
                    cells.append(f"{statistics.median(ratios):.2f}x")
                shown = ",".join(f"{c:g}" for c in cost[1:]) if isinstance(cost, list) else cost
                print(f"| {shown} | {k} | {policy} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
