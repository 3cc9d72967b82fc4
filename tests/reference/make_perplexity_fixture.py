#!/usr/bin/env python3
"""Makes tests/fixtures/perplexity/smollm2_gpl3_ctx128.json: the oracle for `llmserve perplexity`.
llama.cpp (llama-cpp-python, its own tokenizer and kernels) scores the first 6000 bytes of
/usr/share/common-licenses/GPL-3 with the default GGUF as llama-perplexity defines it: the text
tokenized once (with BOS when the model adds one), cut into windows of CTX tokens (a trailing
partial window dropped), each window's first token replaced by BOS when the model adds one, and
the tokens at positions CTX/2 + 1 .. CTX - 1 scored from the logits of the position before.
The text is stored in the fixture.

Run: /tmp/refvenv/bin/python tests/reference/make_perplexity_fixture.py
(needs llama-cpp-python, built without AMX on AMX hosts: its AMX path crashes there)
"""
import json
import math
import pathlib

import numpy as np
from llama_cpp import Llama

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "perplexity" / "smollm2_gpl3_ctx128.json"
MODEL = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
TEXT = pathlib.Path("/usr/share/common-licenses/GPL-3")
CTX = 128


def log_softmax(row):
    row = row.astype(np.float64)
    m = row.max()
    return row - m - math.log(np.exp(row - m).sum())


def main():
    text = TEXT.read_bytes()[:6000].decode("utf-8", errors="ignore")
    llm = Llama(str(MODEL), n_ctx=CTX, n_batch=CTX, n_threads=2, logits_all=True, verbose=False)
    add_bos = llm.metadata.get("tokenizer.ggml.add_bos_token", "true") == "true"
    tokens = llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=False)
    bos = llm.token_bos()
    windows = len(tokens) // CTX
    first = CTX // 2
    nll, count, per_window = 0.0, 0, []
    for w in range(windows):
        ids = list(tokens[w * CTX:(w + 1) * CTX])
        if add_bos:
            ids[0] = bos
        llm.reset()
        llm.eval(ids)
        for k in range(first, CTX - 1):
            nll -= log_softmax(np.array(llm.scores[k]))[ids[k + 1]]
            count += 1
        per_window.append(round(math.exp(nll / count), 5))
    OUT.write_text(json.dumps({
        "source": "llama-cpp-python (llama.cpp) over the first 6000 bytes of GPL-3, "
                  "tests/reference/make_perplexity_fixture.py",
        "ctx": CTX, "add_bos": add_bos, "text": text, "tokens": len(tokens), "windows": windows,
        "tokens_scored": count, "ppl": round(math.exp(nll / count), 5),
        "ppl_after_each_window": per_window,
    }, indent=1) + "\n")
    print(f"wrote {OUT}: ppl {math.exp(nll / count):.4f} over {count} tokens, {windows} windows")


if __name__ == "__main__":
    main()
