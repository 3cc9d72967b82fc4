#!/usr/bin/env python3
"""Embeddings per second, llmserve against llama.cpp's llama-server --embedding on one GGUF (issue 55).

Starts `llmserve serve` and `llama-server --embedding` in turn on the same file (same threads, same
number of parallel sequences) and times OpenAI `POST /v1/embeddings`:
  - batch 1: --requests requests of one text each, one after another;
  - batch B: one request of B texts (--batches), repeated --repeats times.
Texts are --words-word sentences from a fixed word list (the same for both servers; both tokenize
them with the GGUF's own tokenizer, and the token counts they report are printed). Rounds
alternate the servers (--rounds); the table has each server's median embeddings/s and the ratio.
Both servers' vectors of the same texts are compared (cosine) so the figures are of the same work.

    .venv-bench/bin/python bench/real_sizes/make_random_gguf.py --shape qwen3-embedding-0.6b \\
        --type f16 --out bench/embeddings/out/qwen3-embedding-0.6b-F16.gguf
    .venv-bench/bin/python bench/embeddings/embed_vs_llamacpp.py \\
        --model bench/embeddings/out/qwen3-embedding-0.6b-F16.gguf --pooling last
"""
import argparse
import json
import statistics
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "real_sizes"))
from serve_vs_llama_server import Server, free_port, log, niced, show  # noqa: E402

WORDS = ("the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing "
         "matches in the old town square near rivers mountains and bright autumn forests where "
         "people gather to read write and talk about science music history and distant stars").split()


def texts(n, words, seed):
    out = []
    for i in range(n):
        k = (seed * 7919 + i * 104729) % len(WORDS)
        out.append(" ".join(WORDS[(k + j * (i % 5 + 1)) % len(WORDS)] for j in range(words)))
    return out


MODEL_IDS = {}  # port -> the served model's id (/v1/models)


def model_id(port):
    if port not in MODEL_IDS:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=60) as r:
            MODEL_IDS[port] = json.loads(r.read())["data"][0]["id"]
    return MODEL_IDS[port]


def post(port, body, timeout=1800):
    body = {**body, "model": model_id(port)}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/embeddings",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def vectors(resp):
    return [d["embedding"] for d in sorted(resp["data"], key=lambda d: d["index"])]


def measure(port, a, batch, seed):
    """Embeddings per second and tokens per text (the server's usage)."""
    if batch == 1:
        items = texts(a.requests, a.words, seed)
        t0 = time.perf_counter()
        tokens = 0
        for t in items:
            tokens += post(port, {"model": "m", "input": t}).get("usage", {}).get("prompt_tokens", 0)
        dt = time.perf_counter() - t0
        return len(items) / dt, tokens / len(items)
    done, tokens, dt = 0, 0, 0.0
    for r in range(a.repeats):
        items = texts(batch, a.words, seed * 100 + r)
        t0 = time.perf_counter()
        resp = post(port, {"model": "m", "input": items})
        dt += time.perf_counter() - t0
        done += len(items)
        tokens += resp.get("usage", {}).get("prompt_tokens", 0)
    return done / dt, tokens / done


def llmserve_server(a, port):
    cmd = niced([a.llmserve, "serve", "--model", a.model, "--threads", a.threads, "--http-port",
                 port, "--grpc-port", 0, "--max-num-seqs", max(a.batches)] + a.llmserve_arg, a.nice)
    return Server("llmserve", cmd, "/ready", port)


def llama_server(a, port):
    cmd = niced([Path(a.llama_bin) / "llama-server", "-m", a.model, "--embedding", "--pooling",
                 a.pooling, "-t", a.threads, "-np", max(a.batches), "-c",
                 max(a.batches) * a.ctx_per_seq, "-b", a.llama_batch, "-ub", a.llama_batch,
                 "--host", "127.0.0.1", "--port", port] + a.llama_arg, a.nice)
    return Server("llama-server", cmd, "/health", port)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--pooling", default="last", help="llama-server --pooling (the GGUF's own for llmserve)")
    ap.add_argument("--llmserve", default=str(REPO / "build" / "llmserve"))
    ap.add_argument("--llama-bin", default=str(REPO / ".deps" / "llama.cpp-0.3.36" / "build" / "bin"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batches", default="1,32", help="comma list; 1 = one text per request")
    ap.add_argument("--words", type=int, default=96, help="words per text")
    ap.add_argument("--requests", type=int, default=16, help="batch-1 requests per round")
    ap.add_argument("--repeats", type=int, default=2, help="batch-B requests per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ctx-per-seq", type=int, default=512)
    ap.add_argument("--llama-batch", type=int, default=4096, help="llama-server -b and -ub")
    ap.add_argument("--nice", type=int, default=None)
    ap.add_argument("--llmserve-arg", action="append", default=[])
    ap.add_argument("--llama-arg", action="append", default=[])
    ap.add_argument("--servers", default="llmserve,llama-server")
    a = ap.parse_args()
    a.batches = [int(b) for b in a.batches.split(",")]
    servers = a.servers.split(",")
    make = {"llmserve": llmserve_server, "llama-server": llama_server}
    rates = {s: {b: [] for b in a.batches} for s in servers}
    tok = {s: {} for s in servers}
    probe = texts(4, a.words, 999)
    probe_vecs = {}
    cmds = {}
    for rnd in range(a.rounds):
        for s in servers:
            port = free_port()
            srv = make[s](a, port)
            cmds[s] = show(srv.cmd)
            with srv:
                post(port, {"model": "m", "input": probe[:1]})  # warm
                if rnd == 0:
                    probe_vecs[s] = vectors(post(port, {"model": "m", "input": probe}))
                for b in a.batches:
                    r, t = measure(port, a, b, seed=rnd)
                    rates[s][b].append(r)
                    tok[s][b] = t
                    log(f"round {rnd} {s} batch {b}: {r:.2f} embeddings/s ({t:.0f} tokens/text)")
    print(f"\nmodel {Path(a.model).name}, {a.threads} threads, {a.words} words per text, "
          f"{a.rounds} rounds (alternating), medians\n")
    for s, c in cmds.items():
        print(f"    {s}: {c}")
    print()
    print("| batch | " + " | ".join(f"{s} emb/s" for s in servers) + " | ratio | tokens/text |")
    print("|---|" + "---|" * (len(servers) + 2))
    for b in a.batches:
        med = [statistics.median(rates[s][b]) for s in servers]
        ratio = f"{med[0] / med[1]:.2f}x" if len(med) == 2 and med[1] > 0 else "-"
        toks = "/".join(f"{tok[s].get(b, 0):.0f}" for s in servers)
        print(f"| {b} | " + " | ".join(f"{m:.2f}" for m in med) + f" | {ratio} | {toks} |")
    if len(probe_vecs) == 2:
        import numpy as np
        x, y = (np.asarray(probe_vecs[s]) for s in servers)
        cos = (x * y).sum(1) / (np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1))
        print(f"\ncosine of the two servers' vectors of the same texts: min {cos.min():.5f}")


if __name__ == "__main__":
    main()
