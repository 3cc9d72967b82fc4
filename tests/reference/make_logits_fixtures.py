#!/usr/bin/env python3
"""Makes tests/fixtures/logits/smollm2_135m_q4_1.json: the correctness oracle for the Llama graph
on the default GGUF model. HF transformers loads the same .gguf (dequantizing every weight to
f32, un-permuting llama.cpp's Q/K rows back to the halves RoPE layout) and runs it in f32 — an
implementation independent of ours.

For each prompt it stores the prompt token ids (HF tokenizer, so the C++ tests do not depend on
our tokenizer), the top-20 logits of the last prompt position (ids + values), and the greedy
continuation of 32 tokens (argmax each step, EOS not special) with the margin between the best
and second-best logit at each step.

Run: /work/refvenv/bin/python tests/reference/make_logits_fixtures.py [--model PATH]
"""
import argparse
import json
import pathlib

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "logits" / "smollm2_135m_q4_1.json"
TOP = 20
STEPS = 32

LONG_1 = (
    "The history of the printing press begins in the fifteenth century, when Johannes Gutenberg "
    "combined several existing technologies into a practical system for producing books. Before "
    "his work, texts in Europe were copied by hand, usually by monks or professional scribes, and "
    "a single book could take months to finish. Woodblock printing was known, but carving a whole "
    "page into a block of wood was slow and the blocks wore out. Gutenberg's key idea was movable "
    "metal type: individual letters cast from an alloy of lead, tin and antimony, which could be "
    "arranged into lines, locked into a frame, inked, and pressed onto paper. He also developed an "
    "oil-based ink that stuck to metal, and adapted the screw press used for making wine. The "
    "result was a machine that could print hundreds of pages a day. Within fifty years, printing "
    "shops had spread to more than two hundred cities, and millions of books were in circulation. "
    "Summarize the main idea of this passage in one sentence:"
)
LONG_2 = (
    "def merge_sorted(a, b):\n    result = []\n    i = j = 0\n    while i < len(a) and j < len(b):\n"
    "        if a[i] <= b[j]:\n            result.append(a[i])\n            i += 1\n        else:\n"
    "            result.append(b[j])\n            j += 1\n    result.extend(a[i:])\n"
    "    result.extend(b[j:])\n    return result\n\n\ndef merge_sort(items):\n"
    "    if len(items) <= 1:\n        return items\n    mid = len(items) // 2\n"
    "    left = merge_sort(items[:mid])\n    right = merge_sort(items[mid:])\n"
    "    return merge_sorted(left, right)\n\n\ndef binary_search(items, target):\n"
    "    lo, hi = 0, len(items) - 1\n    while lo <= hi:\n        mid = (lo + hi) // 2\n"
    "        if items[mid] == target:\n            return mid\n        if items[mid] < target:\n"
    "            lo = mid + 1\n        else:\n            hi = mid - 1\n    return -1\n\n\n"
    "def is_palindrome(s):\n"
)
LONG_3 = (
    "Photosynthesis is the process by which green plants, algae and some bacteria convert light "
    "energy into chemical energy. In the light-dependent reactions, which take place in the "
    "thylakoid membranes of the chloroplast, chlorophyll absorbs photons and uses their energy to "
    "split water molecules, releasing oxygen as a by-product. The energy is stored temporarily in "
    "ATP and NADPH. In the Calvin cycle, which takes place in the stroma, these molecules provide "
    "the energy and electrons needed to fix carbon dioxide from the air into three-carbon sugars. "
    "Those sugars are then used to build glucose, starch, cellulose and the other organic "
    "compounds the plant needs to grow. Explain why photosynthesis matters for animals too."
)

RAW = [
    "The capital of France is",
    "Once upon a time, in a small village by the sea,",
    "1, 2, 3, 4, 5,",
    "def fibonacci(n):",
    "The quick brown fox",
    "Water boils at a temperature of",
    "In 1969, the first humans",
    "import numpy as np\n\nx = np.",
    "Roses are red, violets are",
    LONG_1,
    LONG_2,
]
CHAT = [
    "What is the capital of France?",
    "Write a haiku about autumn.",
    "How many legs does a spider have?",
    "Translate 'good morning' into Spanish.",
    "Give me three tips for learning to code.",
    "What is 12 times 7?",
    "Hi!",
    "Explain what a black hole is to a child.",
    "List the planets of the solar system.",
    LONG_3,
    LONG_1,
]


def greedy(model, ids):
    out, margins = [], []
    with torch.no_grad():
        res = model(torch.tensor([ids]), use_cache=True)
        past = res.past_key_values
        last = res.logits[0, -1].float()
        for _ in range(STEPS):
            top2 = torch.topk(last, 2)
            tok = int(top2.indices[0])
            out.append(tok)
            margins.append(round(float(top2.values[0] - top2.values[1]), 5))
            res = model(torch.tensor([[tok]]), past_key_values=past, use_cache=True)
            past = res.past_key_values
            last = res.logits[0, -1].float()
    return out, margins


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=str(ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    args = ap.parse_args()
    torch.set_num_threads(2)
    path = pathlib.Path(args.model)
    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32).eval()

    cases = []
    for text in RAW:
        cases.append(("raw", text, tok(text, add_special_tokens=True)["input_ids"]))
    for text in CHAT:
        ids = tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True)
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        cases.append(("chat", text, list(map(int, ids))))

    records = []
    for kind, text, ids in cases:
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0, -1].float()
        top = torch.topk(logits, TOP)
        cont, margins = greedy(model, ids)
        records.append({
            "kind": kind,
            "prompt": text,
            "prompt_ids": ids,
            "top_ids": [int(i) for i in top.indices],
            "top_logits": [round(float(v), 5) for v in top.values],
            "greedy": cont,
            "greedy_margins": margins,
            "greedy_text": tok.decode(cont),
        })
        print(f"{kind:4s} {len(ids):4d} tok  {tok.decode(cont)[:60]!r}", flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"model": path.name, "top": TOP, "steps": STEPS, "cases": records}, indent=1) + "\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
