#!/usr/bin/env python3
"""Side-by-side CPU speed of llmserve and llama.cpp on the same GGUF, prompt and thread count.

For each of --runs rounds (the two engines alternate inside a round, so load on a shared
machine hits both alike) it measures
  * prefill tok/s of one --prompt-tokens prompt (one batch), and
  * single-stream greedy decode tok/s over --gen-tokens tokens (EOS ignored),
then prints (and writes to --out) a markdown table of the medians and the ratio ours / llama.cpp
computed from the same rounds.

llama.cpp runs through llama-cpp-python (in /work/refvenv); llmserve through
`llmserve generate ... --ignore-eos`, whose stderr stats line gives its prefill and decode tok/s.
The prompt is built from llama.cpp's tokenization, cut to --prompt-tokens tokens and turned back
into text; llmserve's own count of that text is reported next to it.

  /work/refvenv/bin/python bench/llamacpp/compare.py --llmserve build-speed/server/llmserve \\
      --model models/SmolLM2-135M-Instruct.Q4_1.gguf --threads 2 --runs 5 --out /tmp/cmp.md
"""
import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import time

import numpy as np

STATS = re.compile(r"stats: prompt (\d+) tok, generated (\d+) tok, ttft ([\d.]+) ms, "
                   r"prefill ([\d.]+) tok/s, decode ([\d.]+) tok/s")

PARAGRAPH = ("The history of computing is a story of layers. Each generation of engineers built "
             "tools on top of the work of the previous one, hiding details that once mattered "
             "and exposing new abstractions that let more people solve harder problems. ")


def build_prompt(llm, n_tokens):
    text = PARAGRAPH
    while len(llm.tokenize(text.encode(), add_bos=False)) < n_tokens + 16:
        text += PARAGRAPH
    toks = llm.tokenize(text.encode(), add_bos=False)[:n_tokens]
    return toks, llm.detokenize(toks).decode("utf-8", errors="ignore")


def run_llamacpp(llm, prompt_toks, gen_tokens):
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(prompt_toks)
    t1 = time.perf_counter()
    tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
    t2 = time.perf_counter()
    for _ in range(gen_tokens - 1):
        llm.eval([tok])
        tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
    t3 = time.perf_counter()
    return len(prompt_toks) / (t1 - t0), (gen_tokens - 1) / (t3 - t2)


def run_ours(binary, model, prompt, gen_tokens, threads):
    cmd = [binary, "generate", "--model", model, "--prompt", prompt, "--max-tokens",
           str(gen_tokens), "--ignore-eos", "--temperature", "0", "--threads", str(threads)]
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    m = STATS.search(p.stderr)
    if m is None:
        sys.exit("no stats line from llmserve:\n" + p.stderr)
    return int(m.group(1)), float(m.group(4)), float(m.group(5))


def load_avg():
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--llmserve", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--out", default="")
    a = ap.parse_args()

    import llama_cpp
    llm = llama_cpp.Llama(model_path=a.model, n_ctx=a.prompt_tokens + a.gen_tokens + 64,
                          n_batch=a.prompt_tokens, n_ubatch=a.prompt_tokens, n_threads=a.threads,
                          n_threads_batch=a.threads, verbose=False)
    prompt_toks, prompt = build_prompt(llm, a.prompt_tokens)
    load_before = load_avg()
    ours_pf, ours_dec, ref_pf, ref_dec, ours_n = [], [], [], [], 0
    for r in range(a.runs):
        ours_n, pf, dec = run_ours(a.llmserve, a.model, prompt, a.gen_tokens, a.threads)
        ours_pf.append(pf)
        ours_dec.append(dec)
        pf, dec = run_llamacpp(llm, prompt_toks, a.gen_tokens)
        ref_pf.append(pf)
        ref_dec.append(dec)
        print(f"round {r + 1}: llmserve prefill {ours_pf[-1]:.1f} decode {ours_dec[-1]:.1f} | "
              f"llama.cpp prefill {pf:.1f} decode {dec:.1f} tok/s", file=sys.stderr)

    med = statistics.median
    # Ratio of medians, and the median of the per-round ratios (same round = same load).
    rows = [("prefill tok/s (%d-token prompt)" % a.prompt_tokens, ours_pf, ref_pf),
            ("decode tok/s (single stream, %d tokens)" % a.gen_tokens, ours_dec, ref_dec)]
    lines = [
        f"model `{os.path.basename(a.model)}`, threads {a.threads}, {a.runs} rounds, "
        f"llama-cpp-python {llama_cpp.__version__}, {platform.machine()}, "
        f"load average before {load_before}, after {load_avg()}",
        f"llmserve counts the prompt as {ours_n} tokens, llama.cpp as {len(prompt_toks)}.",
        "",
        "| metric | llmserve (median) | llama.cpp (median) | ratio of medians | median of per-round ratios |",
        "|---|---|---|---|---|",
    ]
    for name, ours, ref in rows:
        per_round = [o / f for o, f in zip(ours, ref)]
        lines.append(f"| {name} | {med(ours):.1f} | {med(ref):.1f} | {med(ours) / med(ref):.2f}x | "
                     f"{med(per_round):.2f}x |")
    lines.append("")
    lines.append("raw llmserve prefill: " + ", ".join(f"{x:.1f}" for x in ours_pf))
    lines.append("raw llama.cpp prefill: " + ", ".join(f"{x:.1f}" for x in ref_pf))
    lines.append("raw llmserve decode: " + ", ".join(f"{x:.1f}" for x in ours_dec))
    lines.append("raw llama.cpp decode: " + ", ".join(f"{x:.1f}" for x in ref_dec))
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
