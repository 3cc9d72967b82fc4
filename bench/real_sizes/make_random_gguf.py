#!/usr/bin/env python3
"""Writes a random-weight llama GGUF of a real model's shape, in F16 or BF16, for speed benchmarks.

Speed does not depend on the weights, so a random model of a real shape measures what a user's
download of that model would run at, without fetching gigabytes. The file is what llama.cpp's
converter writes for such a model (`convert_hf_to_gguf.py --outtype f16|bf16`): 2-D weights in the
base type, norms (and rope_freqs) F32, general.file_type set, so `llama-quantize` turns it into any
other format and both llama.cpp and llmserve load it.

Weights: normal, std 0.02 (--std); norms 1. To keep an 8B file cheap to write, every tensor is cut
from one pool of --pool-elems random values at a random offset (streamed to disk tensor by tensor,
never the whole model in memory).

Tokenizer: every tokenizer.* key (gpt2 BPE vocabulary, merges, token types, special ids, chat
template) is copied from --tokenizer-from (default: the default model, SmolLM2-135M-Instruct,
49152 tokens), read with gguf.GGUFReader. When the shape's vocabulary is larger (Llama-3.2-1B's
128256), --vocab pad (the default) appends unused placeholder tokens ("<|pad_N|>", type UNUSED)
so that the embedding and LM head have the real model's size; --vocab keep uses the tokenizer's
49152 rows instead. Llama-3.1-8B's body runs on the default vocabulary (49152) as the issue asks.

Shapes (--shape): smollm2-1.7b, llama-3.2-1b, llama-3.1-8b-body, qwen3-embedding-0.6b (arch
qwen3, q/k norms, pooling_type LAST as the converter writes an embedding model); --layers N keeps the dimensions
and cuts the layer count (a quick load check), --list prints them.

  .venv-bench/bin/python bench/real_sizes/make_random_gguf.py --shape smollm2-1.7b --type f16 \\
      --out bench/real_sizes/out/smollm2-1.7b-F16.gguf
"""
import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

try:
    import gguf
except ImportError:  # pragma: no cover
    sys.exit("make_random_gguf: needs the PyPI gguf package (scripts: .venv-bench, see bench/real_sizes/README.md)")

REPO = Path(__file__).resolve().parents[2]
DEFAULT_TOKENIZER = REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"

# HF config.json values of the real models.
SHAPES = {
    "smollm2-1.7b": dict(
        name="SmolLM2-1.7B (random weights)", hidden=2048, layers=24, heads=32, kv_heads=32,
        ffn=8192, vocab=49152, rope_theta=130000.0, ctx=8192, eps=1e-5, tied=True, rope_scaling=None),
    "llama-3.2-1b": dict(
        name="Llama-3.2-1B (random weights)", hidden=2048, layers=16, heads=32, kv_heads=8,
        ffn=8192, vocab=128256, rope_theta=500000.0, ctx=131072, eps=1e-5, tied=True,
        rope_scaling=dict(factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0, original_ctx=8192)),
    "llama-3.1-8b-body": dict(
        name="Llama-3.1-8B body, default vocabulary (random weights)", hidden=4096, layers=32,
        heads=32, kv_heads=8, ffn=14336, vocab=None, rope_theta=500000.0, ctx=131072, eps=1e-5,
        tied=False,
        rope_scaling=dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_ctx=8192)),
    # Qwen3-Embedding-0.6B: a qwen3 body (q/k norms, head_dim 128 over hidden 1024) whose GGUF
    # llama.cpp's converter marks with qwen3.pooling_type LAST (3).
    "qwen3-embedding-0.6b": dict(
        name="Qwen3-Embedding-0.6B (random weights)", arch="qwen3", hidden=1024, layers=28,
        heads=16, kv_heads=8, head_dim=128, ffn=3072, vocab=151669, rope_theta=1000000.0,
        ctx=32768, eps=1e-6, tied=True, rope_scaling=None, pooling_type=3),
}

FILE_TYPE = {"f16": gguf.LlamaFileType.MOSTLY_F16, "bf16": gguf.LlamaFileType.MOSTLY_BF16}
QTYPE = {"f16": gguf.GGMLQuantizationType.F16, "bf16": gguf.GGMLQuantizationType.BF16}


def llama3_rope_factors(theta, head_dim, factor, low_freq_factor, high_freq_factor, original_ctx):
    """rope_freqs.weight as llama.cpp's converter writes it (LlamaModel.generate_extra_tensors)."""
    freqs = 1.0 / (theta ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim))
    low_wavelen = original_ctx / low_freq_factor
    high_wavelen = original_ctx / high_freq_factor
    out = []
    for f in freqs:
        wavelen = 2 * math.pi / f
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (original_ctx / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.asarray(out, dtype=np.float32)


def tokenizer_fields(path):
    """[(key, value, vtype, sub_type)] of every tokenizer.* key, and the token count."""
    r = gguf.GGUFReader(str(path))
    out, n_tokens = [], None
    for key, f in r.fields.items():
        if not key.startswith("tokenizer."):
            continue
        vtype = f.types[0]
        sub = f.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        val = f.contents()
        if key == "tokenizer.ggml.tokens":
            n_tokens = len(val)
        out.append((key, val, vtype, sub))
    if n_tokens is None:
        sys.exit(f"make_random_gguf: {path} has no tokenizer.ggml.tokens")
    return out, n_tokens


def pad_tokenizer(fields, n_tokens, vocab):
    """Appends vocab - n_tokens unused placeholder tokens (type UNUSED, no merges)."""
    extra = vocab - n_tokens
    padded = []
    for key, val, vtype, sub in fields:
        if key == "tokenizer.ggml.tokens":
            val = list(val) + [f"<|pad_{i}|>" for i in range(extra)]
        elif key == "tokenizer.ggml.token_type":
            val = list(val) + [int(gguf.TokenType.UNUSED)] * extra
        elif key == "tokenizer.ggml.scores":
            val = list(val) + [-1000.0] * extra
        padded.append((key, val, vtype, sub))
    return padded


class Pool:
    """Random values in the base type; tensors are slices of it from random offsets."""

    def __init__(self, n, std, qtype, seed):
        rng = np.random.default_rng(seed)
        self.rng = rng
        x = (rng.standard_normal(n, dtype=np.float32) * np.float32(std))
        if qtype == gguf.GGMLQuantizationType.F16:
            self.data = x.astype(np.float16)
        else:  # BF16, round to nearest even, stored as uint16
            u = x.view(np.uint32)
            self.data = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
        self.n = n

    def take(self, count):
        out = np.empty(count, dtype=self.data.dtype)
        done = 0
        while done < count:
            off = int(self.rng.integers(0, self.n))
            k = min(self.n - off, count - done)
            out[done:done + k] = self.data[off:off + k]
            done += k
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), help="real model shape")
    ap.add_argument("--type", choices=sorted(FILE_TYPE), default="f16", help="base weight type")
    ap.add_argument("--out", help="output .gguf path")
    ap.add_argument("--layers", type=int, help="cut the layer count (dimensions unchanged), e.g. 2 for a load check")
    ap.add_argument("--vocab", choices=["pad", "keep"], default="pad",
                    help="vocabulary larger than the tokenizer's: pad the tokenizer with unused tokens "
                         "to the real size (default) or keep the tokenizer's size")
    ap.add_argument("--tokenizer-from", default=str(DEFAULT_TOKENIZER), help="GGUF whose tokenizer.* keys are copied")
    ap.add_argument("--std", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pool-elems", type=int, default=1 << 25)
    ap.add_argument("--list", action="store_true", help="print the shapes and exit")
    args = ap.parse_args()

    if args.list:
        for k, s in SHAPES.items():
            print(k, {x: y for x, y in s.items() if x != "name"})
        return
    if not args.shape or not args.out:
        ap.error("--shape and --out are needed")

    s = dict(SHAPES[args.shape])
    tok_fields, n_tok = tokenizer_fields(args.tokenizer_from)
    vocab = s["vocab"] or n_tok
    if vocab > n_tok:
        if args.vocab == "pad":
            tok_fields = pad_tokenizer(tok_fields, n_tok, vocab)
        else:
            vocab = n_tok
    elif vocab < n_tok:
        sys.exit(f"make_random_gguf: shape vocab {vocab} < tokenizer's {n_tok}")
    layers = args.layers or s["layers"]
    hidden, heads, kv_heads, ffn = s["hidden"], s["heads"], s["kv_heads"], s["ffn"]
    head_dim = s.get("head_dim", hidden // heads)
    arch = s.get("arch", "llama")
    qtype = QTYPE[args.type]

    w = gguf.GGUFWriter(args.out, arch)
    name = s["name"] + (f", {layers} of {s['layers']} layers" if layers != s["layers"] else "")
    w.add_name(name)
    w.add_type("model")
    w.add_block_count(layers)
    w.add_context_length(s["ctx"])
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_freq_base(s["rope_theta"])
    w.add_layer_norm_rms_eps(s["eps"])
    w.add_file_type(int(FILE_TYPE[args.type]))
    w.add_vocab_size(vocab)
    if arch == "llama":
        w.add_rope_dimension_count(head_dim)
    if head_dim != hidden // heads:
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    if "pooling_type" in s:
        w.add_pooling_type(gguf.PoolingType(s["pooling_type"]))
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    for key, val, vtype, sub in tok_fields:
        w.add_key_value(key, val, vtype, sub)

    # (name, numpy shape [rows, cols] / [n], kind) in the converter's order.
    plan = []
    rope_factors = None
    if s["rope_scaling"]:
        rs = s["rope_scaling"]
        rope_factors = llama3_rope_factors(s["rope_theta"], head_dim, rs["factor"], rs["low_freq_factor"],
                                           rs["high_freq_factor"], rs["original_ctx"])
        plan.append(("rope_freqs.weight", (head_dim // 2,), "rope"))
    plan.append(("token_embd.weight", (vocab, hidden), "w"))
    for i in range(layers):
        p = f"blk.{i}."
        plan += [(p + "attn_norm.weight", (hidden,), "norm"),
                 (p + "attn_q.weight", (heads * head_dim, hidden), "w"),
                 (p + "attn_k.weight", (kv_heads * head_dim, hidden), "w"),
                 (p + "attn_v.weight", (kv_heads * head_dim, hidden), "w")]
        if arch == "qwen3":
            plan += [(p + "attn_q_norm.weight", (head_dim,), "norm"),
                     (p + "attn_k_norm.weight", (head_dim,), "norm")]
        plan += [(p + "attn_output.weight", (hidden, heads * head_dim), "w"),
                 (p + "ffn_norm.weight", (hidden,), "norm"),
                 (p + "ffn_gate.weight", (ffn, hidden), "w"),
                 (p + "ffn_up.weight", (ffn, hidden), "w"),
                 (p + "ffn_down.weight", (hidden, ffn), "w")]
    plan.append(("output_norm.weight", (hidden,), "norm"))
    if not s["tied"]:
        plan.append(("output.weight", (vocab, hidden), "w"))

    pool = Pool(args.pool_elems, args.std, qtype, args.seed)
    total_params = 0
    for tname, shape, kind in plan:
        n = int(np.prod(shape))
        total_params += n
        if kind == "w":
            w.add_tensor_info(tname, shape, pool.data.dtype, n * 2, raw_dtype=qtype)
        else:
            w.add_tensor_info(tname, shape, np.dtype(np.float32), n * 4)

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    ones = None
    for tname, shape, kind in plan:
        n = int(np.prod(shape))
        if kind == "w":
            w.write_tensor_data(pool.take(n).reshape(shape))
        elif kind == "rope":
            w.write_tensor_data(rope_factors)
        else:
            if ones is None or ones.shape != shape:
                ones = np.ones(shape, dtype=np.float32)
            w.write_tensor_data(ones)
    w.close()
    size = os.path.getsize(args.out)
    print(f"make_random_gguf: {args.out}: {name}, {args.type.upper()}, {layers} layers, vocab {vocab}"
          f" (tokenizer {n_tok}{', padded' if vocab > n_tok else ''}), {total_params / 1e9:.3f} B params,"
          f" {size / 2**30:.2f} GiB, {time.time() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
