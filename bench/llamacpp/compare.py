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

STATS = re.compile(r"single prompt=(\d+) prefill_tok_s=([\d.]+) decode_tok_s=([\d.]+) "
                   r"prefill_cpu_ms=([\d.]+) decode_cpu_ms_per_tok=([\d.]+)")

PARAGRAPH = ("The history of computing is a story of layers. Each generation of engineers built "
             "tools on top of the work of the previous one, hiding details that once mattered "
             "and exposing new abstractions that let more people solve harder problems. ")


def build_prompt(llm, n_tokens):
    text = PARAGRAPH
    while len(llm.tokenize(text.encode(), add_bos=False)) < n_tokens + 16:
        text += PARAGRAPH
    return llm.tokenize(text.encode(), add_bos=False)[:n_tokens]


def run_llamacpp(llm, prompt_toks, gen_tokens):
    """(prefill tok/s, decode tok/s, prefill CPU ms, decode CPU ms per token)."""
    llm.reset()
    c0, t0 = time.process_time(), time.perf_counter()
    llm.eval(prompt_toks)
    tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
    c1, t1 = time.process_time(), time.perf_counter()
    for _ in range(gen_tokens - 1):
        llm.eval([tok])
        tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
    c2, t2 = time.process_time(), time.perf_counter()
    n = gen_tokens - 1
    return len(prompt_toks) / (t1 - t0), n / (t2 - t1), 1e3 * (c1 - c0), 1e3 * (c2 - c1) / n


def run_ours(binary, model, prompt_toks, gen_tokens, threads, precision):
    cmd = [binary, "--model", model, "--prompt-ids", " ".join(map(str, prompt_toks)),
           "--gen-tokens", str(gen_tokens), "--threads", str(threads), "--precision", precision]
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    m = STATS.search(p.stdout)
    if m is None:
        sys.exit("no result line from bench_model_speed:\n" + p.stdout + p.stderr)
    return tuple(float(m.group(i)) for i in range(2, 6))


def load_avg():
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--llmserve", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precision", default="q8x2", choices=["auto", "q8x2", "q8"],
                    help="llmserve's CPU matmul activations (engine.cpu_matmul_precision)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--out", default="")
    a = ap.parse_args()

    import llama_cpp
    llm = llama_cpp.Llama(model_path=a.model, n_ctx=a.prompt_tokens + a.gen_tokens + 64,
                          n_batch=a.prompt_tokens + a.gen_tokens + 64, n_ubatch=a.prompt_tokens,
                          n_threads=a.threads,
                          n_threads_batch=a.threads, verbose=False)
    prompt_toks = build_prompt(llm, a.prompt_tokens)
    load_before = load_avg()
    names = ["prefill tok/s (%d-token prompt, wall)" % a.prompt_tokens,
             "decode tok/s (single stream, %d tokens, wall)" % a.gen_tokens,
             "prefill CPU ms (all threads; lower is better)",
             "decode CPU ms per token (all threads; lower is better)"]
    ours, ref = [[] for _ in names], [[] for _ in names]
    for r in range(a.runs):
        for i, v in enumerate(run_ours(a.llmserve, a.model, prompt_toks, a.gen_tokens, a.threads, a.precision)):
            ours[i].append(v)
        for i, v in enumerate(run_llamacpp(llm, prompt_toks, a.gen_tokens)):
            ref[i].append(v)
        print(f"round {r + 1}: llmserve " + " ".join(f"{v[-1]:.1f}" for v in ours) +
              " | llama.cpp " + " ".join(f"{v[-1]:.1f}" for v in ref), file=sys.stderr)

    med = statistics.median
    # Speed-up of llmserve: ours / llama.cpp for rates, llama.cpp / ours for CPU times; as a ratio
    # of medians and as the median of the per-round ratios (same round = same load).
    lines = [
        f"model `{os.path.basename(a.model)}`, threads {a.threads}, {a.runs} rounds, "
        f"llmserve precision {a.precision}, "
        f"{len(prompt_toks)}-token prompt (same ids for both), "
        f"llama-cpp-python {llama_cpp.__version__}, {platform.machine()}, "
        f"load average before {load_before}, after {load_avg()}",
        "",
        "| metric | llmserve (median) | llama.cpp (median) | llmserve speed-up, ratio of medians "
        "| median of per-round speed-ups |",
        "|---|---|---|---|---|",
    ]
    for i, name in enumerate(names):
        rate = i < 2
        per_round = [(o / f if rate else f / o) for o, f in zip(ours[i], ref[i])]
        mo, mf = med(ours[i]), med(ref[i])
        lines.append(f"| {name} | {mo:.1f} | {mf:.1f} | {(mo / mf if rate else mf / mo):.2f}x | "
                     f"{med(per_round):.2f}x |")
    lines.append("")
    for i, name in enumerate(names):
        lines.append(f"raw {name}: llmserve " + ", ".join(f"{x:.1f}" for x in ours[i]) +
                     "; llama.cpp " + ", ".join(f"{x:.1f}" for x in ref[i]))
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
