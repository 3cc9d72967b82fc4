#!/usr/bin/env python3
"""Writes a random-weight mixture-of-experts GGUF (architecture qwen3moe, as llama.cpp's converter
writes a Qwen3-MoE checkpoint) in F16, for speed benchmarks; `llama-quantize ... Q4_K_M` turns it
into the format both engines are compared on.

Shapes (--shape):
  olmoe-1b-7b-like   OLMoE-1B-7B's dimensions (hidden 2048, 16 layers, 16 heads, 64 experts,
                     8 per token, expert ffn 1024) as a Qwen3-MoE (q/k norm, no biases):
                     6.9 B parameters, 1.3 B active per token
  qwen3-moe-scaled   Qwen3-30B-A3B scaled to this machine (hidden 1024, 16 layers, 16 heads,
                     4 kv heads, head_dim 64, 64 experts, 8 per token, expert ffn 512):
                     1.7 B parameters, 0.3 B active per token
The vocabulary and tokenizer are the default model's (SmolLM2, 49152 tokens). Weights: normal,
std 0.02, cut from one random pool (make_random_gguf.py's Pool); norms 1; the routers random too,
so tokens spread over the experts.

  /work/refvenv/bin/python bench/real_sizes/make_random_moe_gguf.py --shape qwen3-moe-scaled \\
      --out bench/real_sizes/out/qwen3-moe-scaled-F16.gguf
"""
import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gguf  # noqa: E402
from make_random_gguf import DEFAULT_TOKENIZER, Pool, tokenizer_fields  # noqa: E402

SHAPES = {
    "olmoe-1b-7b-like": dict(hidden=2048, layers=16, heads=16, kv_heads=16, head_dim=128,
                             experts=64, used=8, expert_ffn=1024, ctx=4096),
    "qwen3-moe-scaled": dict(hidden=1024, layers=16, heads=16, kv_heads=4, head_dim=64,
                             experts=64, used=8, expert_ffn=512, ctx=4096),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    s = SHAPES[args.shape]
    tok_fields, vocab = tokenizer_fields(DEFAULT_TOKENIZER)
    H, L, E, F = s["hidden"], s["layers"], s["experts"], s["expert_ffn"]
    nh, nkv, hd = s["heads"], s["kv_heads"], s["head_dim"]
    arch = "qwen3moe"
    w = gguf.GGUFWriter(args.out, arch)
    w.add_name(f"{args.shape} (random weights)")
    w.add_type("model")
    w.add_block_count(L)
    w.add_context_length(s["ctx"])
    w.add_embedding_length(H)
    w.add_feed_forward_length(F)
    w.add_head_count(nh)
    w.add_head_count_kv(nkv)
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_rope_freq_base(1000000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_expert_count(E)
    w.add_expert_used_count(s["used"])
    w.add_expert_feed_forward_length(F)
    w.add_file_type(int(gguf.LlamaFileType.MOSTLY_F16))
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    for key, val, vtype, sub in tok_fields:
        w.add_key_value(key, val, vtype, sub)

    plan = [("token_embd.weight", (vocab, H), "w")]
    for i in range(L):
        p = f"blk.{i}."
        plan += [(p + "attn_norm.weight", (H,), "norm"),
                 (p + "attn_q.weight", (nh * hd, H), "w"),
                 (p + "attn_k.weight", (nkv * hd, H), "w"),
                 (p + "attn_v.weight", (nkv * hd, H), "w"),
                 (p + "attn_output.weight", (H, nh * hd), "w"),
                 (p + "attn_q_norm.weight", (hd,), "norm"),
                 (p + "attn_k_norm.weight", (hd,), "norm"),
                 (p + "ffn_norm.weight", (H,), "norm"),
                 (p + "ffn_gate_inp.weight", (E, H), "router"),
                 (p + "ffn_gate_exps.weight", (E, F, H), "w"),
                 (p + "ffn_up_exps.weight", (E, F, H), "w"),
                 (p + "ffn_down_exps.weight", (E, H, F), "w")]
    plan += [("output_norm.weight", (H,), "norm"), ("output.weight", (vocab, H), "w")]
    pool = Pool(1 << 25, 0.02, gguf.GGMLQuantizationType.F16, args.seed)
    rng = np.random.default_rng(args.seed + 1)
    total = active = 0
    for name, shape, kind in plan:
        n = int(np.prod(shape))
        total += n
        active += n * s["used"] // E if "_exps" in name else n
        if kind == "w":
            w.add_tensor_info(name, shape, pool.data.dtype, n * 2,
                              raw_dtype=gguf.GGMLQuantizationType.F16)
        else:
            w.add_tensor_info(name, shape, np.dtype(np.float32), n * 4)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for name, shape, kind in plan:
        n = int(np.prod(shape))
        if kind == "w":
            w.write_tensor_data(pool.take(n).reshape(shape))
        elif kind == "router":
            w.write_tensor_data(rng.standard_normal(shape, dtype=np.float32))
        else:
            w.write_tensor_data(np.ones(shape, dtype=np.float32))
    w.close()
    print(f"make_random_moe_gguf: {args.out}: {total / 1e9:.3f} B parameters, "
          f"{active / 1e9:.3f} B active per token, {os.path.getsize(args.out) / 2**30:.2f} GiB, "
          f"{time.time() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
