#!/usr/bin/env python3
"""Makes tests/fixtures/logits/smollm2_prompt_logprobs.json: the oracle for prompt logprobs
(`echo` + `logprobs`, `prompt_logprobs`). HF transformers loads the default .gguf (dequantized to
f32) and runs each prompt once; for every position p >= 1 it stores log_softmax(logits[p - 1]) at
the prompt token p (its logprob) and the top-TOP ids and logprobs of that distribution.

Prompt ids come from the HF tokenizer, so the daemon tests send ids, not text, and do not depend
on our tokenizer.

Run: <venv with torch, transformers, gguf, accelerate>/bin/python tests/reference/make_prompt_logprobs_fixtures.py
"""
import argparse
import json
import pathlib

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "logits" / "smollm2_prompt_logprobs.json"
TOP = 3

PROMPTS = [
    "The capital of France is Paris, and the capital of Germany is Berlin.",
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
    "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12",
    "Roses are red, violets are blue, sugar is sweet, and so are you.",
    # Long enough that a scoring prefill spans several chunks of a small step budget.
    "The history of the printing press begins in the fifteenth century, when Johannes Gutenberg "
    "combined several existing technologies into a practical system for producing books. Before "
    "his work, texts in Europe were copied by hand, usually by monks or professional scribes, and "
    "a single book could take months to finish. Woodblock printing was known, but carving a whole "
    "page into a block of wood was slow and the blocks wore out. Gutenberg's key idea was movable "
    "metal type: individual letters cast from an alloy of lead, tin and antimony, which could be "
    "arranged into lines, locked into a frame, inked, and pressed onto paper.",
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=str(ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    args = ap.parse_args()
    torch.set_num_threads(2)
    path = pathlib.Path(args.model)
    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32).eval()
    records = []
    for text in PROMPTS:
        ids = tok(text, add_special_tokens=True)["input_ids"]
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].double(), dim=-1)
        positions = []
        for p in range(1, len(ids)):
            row = logp[p - 1]
            top = torch.topk(row, TOP)
            positions.append({
                "token": ids[p],
                "logprob": round(float(row[ids[p]]), 5),
                "rank": int((row > row[ids[p]]).sum()) + 1,
                "top_ids": [int(i) for i in top.indices],
                "top_logprobs": [round(float(v), 5) for v in top.values],
            })
        records.append({"prompt": text, "prompt_ids": ids, "positions": positions})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({
        "model": path.name,
        "made_by": "tests/reference/make_prompt_logprobs_fixtures.py (HF transformers, f32)",
        "top": TOP,
        "prompts": records,
    }, indent=0) + "\n")
    print(f"wrote {OUT} ({len(records)} prompts)")


if __name__ == "__main__":
    main()
