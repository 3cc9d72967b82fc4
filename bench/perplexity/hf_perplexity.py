#!/usr/bin/env python3
"""Perplexity of a GGUF model with HF transformers (f32 on the dequantized weights), by
llama-perplexity's definition, as `llmserve perplexity` computes it: the text tokenized once
(BOS first when the tokenizer adds one), windows of --ctx tokens (the partial tail dropped), the
first token of each window replaced by BOS when the model adds one, and the tokens at positions
ctx/2 + 1 .. ctx - 1 of each window scored. The independent oracle for bench/RESULTS.md.

Run: <venv with torch, transformers, gguf, accelerate>/bin/python bench/perplexity/hf_perplexity.py \
        --model models/SmolLM2-135M-Instruct.Q4_1.gguf --file /usr/share/common-licenses/GPL-3
"""
import argparse
import json
import math
import pathlib
import subprocess

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--file", required=True)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--llmserve", help="tokenize with `LLMSERVE tokenize` (the GGUF tokenizer as "
                    "llama.cpp and HF tokenizers' tokenizer.json split it) instead of the "
                    "tokenizer transformers rebuilds from the GGUF, which splits runs of spaces "
                    "before digits differently")
    args = ap.parse_args()
    torch.set_num_threads(2)
    path = pathlib.Path(args.model)
    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32).eval()
    text = pathlib.Path(args.file).read_text()
    if args.llmserve:
        out = subprocess.run([args.llmserve, "tokenize", "--model", args.model, "--text", text],
                             capture_output=True, text=True, check=True).stdout
        ids = json.loads(out)["ids"]
    else:
        ids = tok(text, add_special_tokens=True)["input_ids"]
    n_ctx, first = args.ctx, args.ctx // 2
    add_bos = tok.bos_token_id is not None and ids[:1] == [tok.bos_token_id]
    nll, count = 0.0, 0
    for c in range(len(ids) // n_ctx):
        window = ids[c * n_ctx:(c + 1) * n_ctx]
        if add_bos:
            window[0] = tok.bos_token_id
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([window])).logits[0].double(), dim=-1)
        for p in range(first, n_ctx - 1):
            nll -= float(logp[p, window[p + 1]])
            count += 1
    print(json.dumps({"ppl": math.exp(nll / count), "tokens": len(ids), "windows": len(ids) // n_ctx,
                      "tokens_scored": count, "ctx": n_ctx, "bos": add_bos}))


if __name__ == "__main__":
    main()
