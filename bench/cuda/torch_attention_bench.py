#!/usr/bin/env python3
"""torch.nn.functional.scaled_dot_product_attention (flash backend, bf16) on the shapes that
bench_cuda's attention benchmarks report, side by side with them (scripts/gpu-check.sh).

    python3 bench/cuda/torch_attention_bench.py --bench-log bench.txt --json-out t.json --md-out t.md

Reads the `BENCH {json}` lines of bench_cuda's output (bench/cuda/bench_util.h): kernels
"decode_attention" (batch, ctx, heads, kv_heads, head_dim, ms) and "prefill_attention" (batch,
q_len, heads, kv_heads, head_dim, ms); with no such lines it uses DEFAULT_SHAPES. Torch gets
contiguous K / V ([batch, kv_heads, len, head_dim]; ours are paged, same bytes), GQA through
enable_gqa (or, where the flash backend refuses it, K / V repeated to every query head, which
the table says), causal masking for prefill. Times: the GPU time of 20 back-to-back calls
queued behind torch.cuda._sleep (no launch gaps), median of 5 such runs, over enough input sets
that the data is several times the L2. Figures: decode GB/s = K + V bytes read / time; prefill
TFLOP/s = 4 heads head_dim L^2 / 2 per sequence / time (the causal half, as bench_cuda counts);
speed ratio = torch ms / our ms (> 1: ours faster). Also measured here: the device-to-device
copy bandwidth (read + write) and a bf16 8192^3 matmul, as the ceilings.
"""
import argparse
import json
import math
import statistics
import sys

DEFAULT_SHAPES = [
    {"kernel": "decode_attention", "batch": 1, "ctx": 32768, "heads": 32, "kv_heads": 8,
     "head_dim": 128},
    {"kernel": "decode_attention", "batch": 64, "ctx": 4096, "heads": 32, "kv_heads": 8,
     "head_dim": 128},
    {"kernel": "prefill_attention", "batch": 1, "q_len": 4096, "heads": 32, "kv_heads": 8,
     "head_dim": 128},
]
L2_BYTES = 60 << 20


def bench_lines(text):
    """The JSON objects of `BENCH {...}` lines (malformed ones skipped)."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("BENCH "):
            try:
                out.append(json.loads(line[6:]))
            except json.JSONDecodeError:
                pass
    return out


def context_of(b):
    for k in ("ctx", "context", "seq_len", "kv_len", "q_len"):
        if k in b:
            return int(b[k])
    raise KeyError("no context length")


def attention_shapes(benches):
    shapes = [b for b in benches if b.get("kernel") in ("decode_attention", "prefill_attention")]
    return shapes or [dict(s) for s in DEFAULT_SHAPES]


def decode_bytes(s):
    return 2.0 * s["batch"] * s.get("kv_heads", 8) * context_of(s) * s.get("head_dim", 128) * 2


def prefill_flops(s):
    L = context_of(s)
    return 4.0 * s.get("heads", 32) * s.get("head_dim", 128) * L * L / 2 * s["batch"]


def gpu_ms(torch, fn, sets, calls=20, runs=5):
    """Median per-call GPU milliseconds of `calls` queued calls (fn(i) uses input set i % sets)."""
    for i in range(3):
        fn(i % sets)
    torch.cuda.synchronize()
    per_call = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if hasattr(torch.cuda, "_sleep"):
            torch.cuda._sleep(20_000_000)  # keeps the GPU busy while the calls are queued
        a.record()
        for i in range(calls):
            fn(i % sets)
        b.record()
        b.synchronize()
        per_call.append(a.elapsed_time(b) / calls)
    return statistics.median(per_call)


def run_torch(s, torch, F):
    B, H, KV, D = s["batch"], s.get("heads", 32), s.get("kv_heads", 8), s.get("head_dim", 128)
    L = context_of(s)
    decode = s["kernel"] == "decode_attention"
    q_len = 1 if decode else L
    per_set = 2 * (B * H * q_len * D + 2 * B * KV * L * D)
    sets = max(1, min(8, math.ceil(4 * L2_BYTES / per_set)))
    gen = torch.Generator(device="cuda").manual_seed(7)

    def rnd(*shape):
        return torch.randn(*shape, device="cuda", dtype=torch.float32,
                           generator=gen).to(torch.bfloat16)

    qs = [rnd(B, H, q_len, D) for _ in range(sets)]
    ks = [rnd(B, KV, L, D) for _ in range(sets)]
    vs = [rnd(B, KV, L, D) for _ in range(sets)]
    from torch.nn.attention import SDPBackend, sdpa_kernel
    note = "flash, enable_gqa"
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        def call(i, gqa=True):
            k, v = ks[i], vs[i]
            if not gqa:
                k, v = k.repeat_interleave(H // KV, 1), v.repeat_interleave(H // KV, 1)
            if gqa and KV != H:
                return F.scaled_dot_product_attention(qs[i], k, v, is_causal=not decode,
                                                      enable_gqa=True)
            return F.scaled_dot_product_attention(qs[i], k, v, is_causal=not decode)
        try:
            call(0)
            ms = gpu_ms(torch, call, sets)
        except RuntimeError as e:  # the flash backend without GQA support: repeat K / V first
            note = f"flash, K/V repeated ({str(e).splitlines()[0][:60]})"
            ks = [k.repeat_interleave(H // KV, 1) for k in ks]
            vs = [v.repeat_interleave(H // KV, 1) for v in vs]
            KV = H
            ms = gpu_ms(torch, lambda i: call(i, gqa=True), sets)
    return ms, note, sets


def ceilings(torch):
    n = 1 << 30
    a = torch.empty(n, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    copy_ms = gpu_ms(torch, lambda i: b.copy_(a), 1, calls=10, runs=3)
    x = torch.randn(8192, 8192, device="cuda").to(torch.bfloat16)
    y = torch.randn(8192, 8192, device="cuda").to(torch.bfloat16)
    mm_ms = gpu_ms(torch, lambda i: x @ y, 1, calls=10, runs=3)
    del a, b, x, y
    return 2.0 * n / (copy_ms * 1e6), 2.0 * 8192 ** 3 / (mm_ms * 1e9)


def our_copy_gbs(text):
    for line in text.splitlines():
        if line.startswith("Device-to-device copy:"):
            try:
                return float(line.split(":")[1].split()[0])
            except (IndexError, ValueError):
                return None
    return None


def fmt(x, spec):
    return "n/a" if x is None else format(x, spec)


def table(rows, copy_gbs, peak_tflops):
    out = ["| shape | ours ms | ours | torch ms | torch | speed ours / torch | ours vs ceiling | "
           "torch backend |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        decode = r["kernel"] == "decode_attention"
        unit = "GB/s" if decode else "TFLOP/s"
        ceil = copy_gbs if decode else peak_tflops
        ours_fig = r.get("ours_figure")
        pct = None if ours_fig is None or not ceil else 100.0 * ours_fig / ceil
        out.append(
            f"| {r['name']} | {fmt(r.get('ours_ms'), '.4f')} | {fmt(ours_fig, '.0f')} {unit} | "
            f"{r['torch_ms']:.4f} | {r['torch_figure']:.0f} {unit} | "
            f"{fmt(r.get('ratio'), '.2f')}x | {fmt(pct, '.0f')}% of "
            f"{'copy bandwidth' if decode else 'bf16 matmul'} | {r['note']} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench-log", help="bench_cuda output with BENCH lines")
    ap.add_argument("--json-out")
    ap.add_argument("--md-out")
    args = ap.parse_args()
    text = open(args.bench_log, encoding="utf-8", errors="replace").read() if args.bench_log \
        else ""
    import torch
    import torch.nn.functional as F
    if not torch.cuda.is_available():
        print("torch_attention_bench: torch sees no CUDA device", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    copy_gbs, peak = ceilings(torch)
    rows = []
    for s in attention_shapes(bench_lines(text)):
        if s.get("error"):
            continue
        decode = s["kernel"] == "decode_attention"
        ms, note, sets = run_torch(s, torch, F)
        name = (f"{'decode' if decode else 'prefill'} B={s['batch']} L={context_of(s)} "
                f"H={s.get('heads', 32)}/{s.get('kv_heads', 8)} D={s.get('head_dim', 128)}")
        work = decode_bytes(s) / 1e6 if decode else prefill_flops(s) / 1e9
        ours_ms = s.get("ms")
        row = {"name": name, "kernel": s["kernel"], "batch": s["batch"], "ctx": context_of(s),
               "heads": s.get("heads", 32), "kv_heads": s.get("kv_heads", 8),
               "head_dim": s.get("head_dim", 128), "torch_ms": ms, "torch_figure": work / ms,
               "note": note, "input_sets": sets}
        if ours_ms:
            row.update(ours_ms=ours_ms, ours_figure=work / ours_ms, ratio=ms / ours_ms)
        rows.append(row)
        print(f"TORCH {json.dumps(row)}", flush=True)
    ours_copy = our_copy_gbs(text)
    md = (f"Ceilings measured with torch: device-to-device copy {copy_gbs:.0f} GB/s (read + write; "
          f"bench_cuda measured {fmt(ours_copy, '.0f')}), bf16 8192^3 matmul {peak:.0f} TFLOP/s.\n\n"
          + table(rows, ours_copy or copy_gbs, peak) + "\n")
    print(md)
    if args.md_out:
        with open(args.md_out, "w", encoding="utf-8") as f:
            f.write(md)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump({"copy_gbs": copy_gbs, "our_copy_gbs": ours_copy, "matmul_tflops": peak,
                       "torch": torch.__version__, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
