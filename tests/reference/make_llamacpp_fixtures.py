#!/usr/bin/env python3
"""Makes tests/fixtures/logits/smollm2_135m_q4_1_llamacpp.json: a second, independent oracle for
the default GGUF model — llama.cpp (llama-cpp-python) running the same quantized arithmetic we do
(weights used in place, activations rounded to 8 bits per 32-element block). For each prompt of
the transformers fixture (same prompt ids) it stores llama.cpp's 32-token greedy continuation and
the top-2 margin at each step.

Run: /work/refvenv/bin/python tests/reference/make_llamacpp_fixtures.py  (needs llama-cpp-python)
"""
import json
import pathlib

import numpy as np
from llama_cpp import Llama

ROOT = pathlib.Path(__file__).resolve().parents[2]
SRC = ROOT / "tests" / "fixtures" / "logits" / "smollm2_135m_q4_1.json"
OUT = ROOT / "tests" / "fixtures" / "logits" / "smollm2_135m_q4_1_llamacpp.json"
MODEL = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def main():
    src = json.loads(SRC.read_text())
    steps = src["steps"]
    llm = Llama(str(MODEL), n_ctx=1024, n_threads=1, n_batch=512, logits_all=True, verbose=False)
    cases = []
    for c in src["cases"]:
        llm.reset()
        ids = list(c["prompt_ids"])
        llm.eval(ids)
        out, margins = [], []
        for _ in range(steps):
            logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
            top2 = np.argsort(-logits)[:2]
            tok = int(top2[0])
            out.append(tok)
            margins.append(round(float(logits[top2[0]] - logits[top2[1]]), 5))
            llm.eval([tok])
        cases.append({"kind": c["kind"], "prompt": c["prompt"], "prompt_ids": ids,
                      "greedy": out, "greedy_margins": margins,
                      "greedy_text": llm.detokenize(out).decode("utf-8", "replace")})
        print(f"{c['kind']:4s} {len(ids):4d} tok  {cases[-1]['greedy_text'][:60]!r}", flush=True)
    OUT.write_text(json.dumps({"model": MODEL.name, "oracle": "llama-cpp-python", "steps": steps,
                               "cases": cases}, indent=1) + "\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
