#!/usr/bin/env python3
"""The spec-identity stage of scripts/gpu-check.sh: whether a backend keeps the promise of
docs/SPECULATIVE.md, output token for token the same with n-gram speculation on and off, and the
same whether a request runs alone or in a batch. Runs `llmserve generate` three times over the
same prompts (greedy and seeded T 0.8, repetitive texts so that drafts are accepted):

  alone     --sequential, speculation off (the reference);
  ngram     --sequential, --speculative-method ngram with a zero draft cost (every step that can
            draft verifies num_tokens drafts, so every check is a multi-row one);
  batched   all prompts at once, speculation off.

    spec_identity.py --llmserve "LOADER --library-path P BUNDLE/bin/llmserve" --model DIR \\
        --device cuda --out DIR

Prints `SPEC identical a/n`, `BATCH identical b/n`, the drafts verified and accepted, and for each
mismatch the prompt and the first differing output index; writes OUT/spec_identity.json. Exit 0
only when both are n/n and drafts were accepted.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys

TEXTS = [
    "one two three four five six one two three four five six one two three",
    "The cat sat on the mat. The cat sat on the mat. The cat sat on",
    "def add(a, b):\n    return a + b\n\ndef add(a, b):\n    return",
    "red green blue red green blue red green blue red",
    "Once upon a time there was a small town by the sea.",
    "1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3,",
    "alpha beta gamma delta alpha beta gamma delta alpha",
    "Write a list of fruits: apple, banana, cherry, apple, banana,",
]


def requests():
    rows = []
    for i, text in enumerate(TEXTS):
        rows.append({"prompt": text, "max_tokens": 40, "temperature": 0.0})
        rows.append({"prompt": text, "max_tokens": 40, "temperature": 0.8, "seed": 100 + i})
    return rows


def generate(cmd, model, device, path, extra):
    argv = cmd + ["generate", "--model", model, "--device", device, "--prompts-file", path] + extra
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} exited {r.returncode}: {r.stderr[-1500:]}")
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    return {ln["index"]: ln for ln in lines}


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b)) if len(a) != len(b) else -1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llmserve", required=True, help="the command that runs llmserve")
    ap.add_argument("--model", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    cmd = shlex.split(args.llmserve)
    rows = requests()
    path = os.path.join(args.out, "spec_prompts.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    alone = generate(cmd, args.model, args.device, path, ["--sequential"])
    ngram = generate(cmd, args.model, args.device, path,
                     ["--sequential", "--speculative-method", "ngram",
                      "--speculative.draft-token-cost", "0"])
    batched = generate(cmd, args.model, args.device, path, [])
    result = {"prompts": len(rows), "spec_identical": 0, "batch_identical": 0,
              "draft_tokens": 0, "accepted_tokens": 0, "mismatches": []}
    for i, row in enumerate(rows):
        ref = alone[i]["token_ids"]
        for name, run, key in (("ngram", ngram, "spec_identical"),
                               ("batched", batched, "batch_identical")):
            got = run[i]["token_ids"]
            if got == ref:
                result[key] += 1
            else:
                result["mismatches"].append({"run": name, "prompt": i, "temperature":
                                             row["temperature"], "first_difference":
                                             first_difference(ref, got)})
        spec = ngram[i].get("spec") or {}
        result["draft_tokens"] += spec.get("draft_tokens", 0)
        result["accepted_tokens"] += spec.get("accepted_tokens", 0)
    n = len(rows)
    print(f"SPEC identical {result['spec_identical']}/{n} (ngram against none, alone)")
    print(f"BATCH identical {result['batch_identical']}/{n} (all at once against alone)")
    print(f"SPEC drafts verified {result['draft_tokens']}, accepted {result['accepted_tokens']}")
    for m in result["mismatches"]:
        print(f"MISMATCH {m['run']} prompt {m['prompt']} (T {m['temperature']}): first "
              f"differing output index {m['first_difference']}")
    with open(os.path.join(args.out, "spec_identity.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    ok = (result["spec_identical"] == n and result["batch_identical"] == n and
          result["accepted_tokens"] > 0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
