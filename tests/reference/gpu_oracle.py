#!/usr/bin/env python3
"""The independent oracle of scripts/gpu-check.sh: random-weight Llama models saved as HF
directories, with the logits HF transformers computes for them.

    python3 tests/reference/gpu_oracle.py --out DIR --tokenizer TOKDIR [--device cuda]
    python3 tests/reference/gpu_oracle.py --out DIR --tokenizer TOKDIR --backend numpy --tiny

Models (MODELS below): `smollm2-135m-shape` (SmolLM2-135M's shape: hidden 576, 30 layers, 9 / 3
heads, head_dim 64, ffn 1536, vocab 49152, tied embeddings, rope_theta 1e5) and `hd128-gqa4`
(hidden 1024, 4 layers, 8 / 2 heads: head_dim 128, a GQA group of 4; untied LM head, rope_theta
5e5). Weights are drawn with a fixed seed, rounded to bf16 and saved as bf16 safetensors with
config.json and TOKDIR's tokenizer.json / tokenizer_config.json, so llmserve can serve them. The
q / k projections are drawn wider than HF's 0.02 init so that attention is far from uniform
(normalized entropy ~0.8; at 0.02 it is ~1.0 and RoPE or masking bugs would not show) while
the bf16-vs-f32 logit error stays near 1e-2 (measured with the numpy twin below).

Reference: the bf16 weights upcast to f32, computed in f32 on `--device` (TF32 off, eager
attention): for each prompt (random ids, lengths PROMPT_LENS) the logits of every prompt
position, then N_NEW greedy steps (full recompute each step) with their logits and the top-2
margin. Written per model: NAME.ref.json (prompts, greedy ids, margins, versions),
NAME.prefill.f32 ([sum(prompt lens), vocab] f32 LE) and NAME.decode.f32 ([prompts, N_NEW,
vocab]: step k's logits, which chose greedy[k]); DIR/manifest.json lists the models.
tests/unit/cuda/hf_oracle_test.cpp reads them (LLMSERVE_GPU_ORACLE_DIR=DIR).

--backend numpy (with --tiny) computes the same reference with a plain numpy Llama, so the file
format and llmserve's side can be checked on a machine without torch; --estimate-bf16-error
prints that twin's logit error with llmserve's bf16 roundings at full shapes (the derivation of
tests/unit/cuda/hf_oracle.h's tolerances).
"""
import argparse
import json
import os
import shutil
import struct
import sys
import time

PROMPT_LENS = [5, 16, 33, 64, 600]
TINY_PROMPT_LENS = [5, 16, 33, 64, 120]
N_NEW = 32
FIRST_ID = 17  # SmolLM2's special tokens are ids 0..16: prompts use none of them

MODELS = {
    "smollm2-135m-shape": dict(hidden=576, layers=30, heads=9, kv_heads=3, head_dim=64,
                               ffn=1536, vocab=49152, tied=True, rope_theta=100000.0,
                               eps=1e-5, max_pos=8192, qk_std=0.055, seed=11),
    "hd128-gqa4": dict(hidden=1024, layers=4, heads=8, kv_heads=2, head_dim=128, ffn=2816,
                       vocab=49152, tied=False, rope_theta=500000.0, eps=1e-5, max_pos=4096,
                       qk_std=0.035, seed=12),
}
TINY = {
    "smollm2-135m-shape": dict(hidden=64, layers=3, heads=4, kv_heads=2, head_dim=16),
    "hd128-gqa4": dict(hidden=128, layers=2, heads=4, kv_heads=1, head_dim=32),
}
STD = 0.02  # every other matrix, as HF's initializer_range


def log(msg):
    print(f"gpu_oracle: {msg}", flush=True)


def model_spec(name, tiny):
    spec = dict(MODELS[name])
    if tiny:
        spec.update(TINY[name], ffn=2 * TINY[name]["hidden"], qk_std=0.1)
    return spec


def hf_config(spec):
    """config.json as transformers 5 writes it (rope_parameters), with rope_theta beside it."""
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": spec["hidden"], "num_hidden_layers": spec["layers"],
        "num_attention_heads": spec["heads"], "num_key_value_heads": spec["kv_heads"],
        "head_dim": spec["head_dim"], "intermediate_size": spec["ffn"],
        "vocab_size": spec["vocab"], "max_position_embeddings": spec["max_pos"],
        "rms_norm_eps": spec["eps"], "rope_theta": spec["rope_theta"],
        "rope_parameters": {"rope_type": "default", "rope_theta": spec["rope_theta"]},
        "tie_word_embeddings": spec["tied"], "attention_bias": False, "mlp_bias": False,
        "hidden_act": "silu", "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 2,
        "dtype": "bfloat16",
    }


def prompts_for(spec, lens, seed):
    import random
    rng = random.Random(seed)
    return [[rng.randrange(FIRST_ID, spec["vocab"]) for _ in range(n)] for n in lens]


def top2(row):
    """(argmax, top1 - top2) of a sequence of floats."""
    best, second, arg = float("-inf"), float("-inf"), -1
    for i, x in enumerate(row):
        if x > best:
            best, second, arg = x, best, i
        elif x > second:
            second = x
    return arg, best - second


def safetensors_header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n))


def check_saved(model_dir, spec):
    """Fails unless model_dir holds bf16 tensors of the expected names and a usable config."""
    files = [f for f in os.listdir(model_dir) if f.endswith(".safetensors")]
    if not files:
        raise SystemExit(f"gpu_oracle: no .safetensors in {model_dir}")
    tensors = {}
    for f in files:
        tensors.update({k: v for k, v in safetensors_header(os.path.join(model_dir, f)).items()
                        if k != "__metadata__"})
    bad = sorted(k for k, v in tensors.items() if v["dtype"] != "BF16")
    if bad:
        raise SystemExit(f"gpu_oracle: tensors not saved as BF16: {bad[:5]}")
    want = {"model.embed_tokens.weight": [spec["vocab"], spec["hidden"]],
            "model.layers.0.self_attn.k_proj.weight": [spec["kv_heads"] * spec["head_dim"],
                                                       spec["hidden"]]}
    if not spec["tied"]:
        want["lm_head.weight"] = [spec["vocab"], spec["hidden"]]
    for k, shape in want.items():
        if k not in tensors or tensors[k]["shape"] != shape:
            raise SystemExit(f"gpu_oracle: {k} missing or not {shape} in {model_dir}")
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    theta = cfg.get("rope_parameters", {}).get("rope_theta", cfg.get("rope_theta"))
    if theta is None or abs(float(theta) - spec["rope_theta"]) > 1e-3 * spec["rope_theta"]:
        cfg["rope_theta"] = spec["rope_theta"]  # llmserve reads either key
        with open(os.path.join(model_dir, "config.json"), "w", encoding="utf-8") as f:
            json.dump(cfg, f, indent=1)
    return len(tensors)


# ----------------------------------------------------------------------------------------------
# transformers backend (the oracle on the GPU machine)
def check_rope_inv_freq(model, spec, torch):
    """Fails unless the loaded model's RoPE frequencies are the f32 ones of its config."""
    hd = spec["head_dim"]
    want = 1.0 / (spec["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    got = [b for n, b in model.named_buffers() if n.endswith("rotary_emb.inv_freq")]
    if not got:
        raise SystemExit("gpu_oracle: the model has no rotary_emb.inv_freq buffer to check")
    for b in got:
        err = ((b.detach().double().cpu() - want).abs() / want).max().item()
        if b.dtype != torch.float32 or err > 1e-6:
            raise SystemExit(f"gpu_oracle: RoPE inv_freq is {b.dtype}, relative error {err:.1e} "
                             "from the f32 frequencies of rope_theta")


def torch_reference(spec, model_dir, prompts, device):
    import torch
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    c = hf_config(spec)
    cfg = LlamaConfig(
        vocab_size=c["vocab_size"], hidden_size=c["hidden_size"],
        intermediate_size=c["intermediate_size"], num_hidden_layers=c["num_hidden_layers"],
        num_attention_heads=c["num_attention_heads"],
        num_key_value_heads=c["num_key_value_heads"], head_dim=c["head_dim"],
        max_position_embeddings=c["max_position_embeddings"], rms_norm_eps=c["rms_norm_eps"],
        rope_theta=c["rope_theta"], tie_word_embeddings=c["tie_word_embeddings"],
        bos_token_id=1, eos_token_id=2, pad_token_id=2, attn_implementation="eager")
    rp = getattr(cfg, "rope_parameters", None)
    theta = rp.get("rope_theta") if isinstance(rp, dict) else getattr(cfg, "rope_theta", None)
    if theta is None or abs(float(theta) - spec["rope_theta"]) > 1e-3:
        raise SystemExit(f"gpu_oracle: transformers took rope_theta {theta}, "
                         f"not {spec['rope_theta']}")
    dev = torch.device(device)
    with dev:
        model = LlamaForCausalLM(cfg)
    gen = torch.Generator(device=dev).manual_seed(spec["seed"])
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, device=dev, dtype=torch.float32)
            if "norm" in name:
                p.copy_(1.0 + 0.1 * noise)
            elif "q_proj" in name or "k_proj" in name:
                p.copy_(spec["qk_std"] * noise)
            else:
                p.copy_(STD * noise)
    model = model.to(torch.bfloat16).eval()
    try:
        model.save_pretrained(model_dir, safe_serialization=True)
    except TypeError:  # a transformers without the argument (safetensors is its only format)
        model.save_pretrained(model_dir)
    # The reference is the saved directory loaded in f32, as a user would load it (every weight
    # is a bf16 value, so the upcast is exact). Not model.float(): model.to(bfloat16) also
    # rounded the rotary inv_freq buffer to bf16, which float() keeps, and that RoPE's angles
    # drift from the checkpoint's by up to 2^-9 x position (0.1 rel L2 in logits by position 600).
    del model
    try:
        model = LlamaForCausalLM.from_pretrained(model_dir, dtype=torch.float32,
                                                 attn_implementation="eager")
    except TypeError:  # transformers 4 names it torch_dtype
        model = LlamaForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32,
                                                 attn_implementation="eager")
    model = model.to(dev).eval()
    check_rope_inv_freq(model, spec, torch)
    if model.config.tie_word_embeddings and \
            model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr():
        raise SystemExit("gpu_oracle: the LM head is not tied to the embedding")

    def forward(ids):
        with torch.no_grad():
            x = torch.tensor([ids], device=dev)
            return model(input_ids=x).logits[0].float()

    prefill, decode, meta = [], [], []
    for ids in prompts:
        rows = forward(ids)
        prefill.append(rows.cpu())
        seq, steps, greedy, margins = list(ids), [rows[-1]], [], []
        for k in range(N_NEW):
            last = steps[-1]
            top = torch.topk(last, 2)
            greedy.append(int(top.indices[0]))
            margins.append(float(top.values[0] - top.values[1]))
            seq.append(greedy[-1])
            if k + 1 < N_NEW:
                steps.append(forward(seq)[-1])
        decode.append(torch.stack(steps).cpu())
        meta.append({"ids": ids, "greedy": greedy, "margins": margins})
    versions = {"torch": torch.__version__, "transformers": transformers.__version__,
                "device": (torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu")}

    def as_bytes(ts):
        return b"".join(t.contiguous().numpy().astype("<f4").tobytes() for t in ts)

    return meta, as_bytes(prefill), as_bytes(decode), versions


# ----------------------------------------------------------------------------------------------
# numpy backend (the same model and reference with plain numpy, for machines without torch)
def numpy_model(spec):
    """The random model's bf16 weights and a float64 forward over them. forward(lowp=True)
    rounds to bf16 where llmserve's CUDA backend does (GEMM inputs, q / k / v, attention
    probabilities, the KV cache): the twin that sizes hf_oracle.h's tolerances."""
    import numpy as np

    def bf16(a):
        b = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
        b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
        return b.astype(np.uint32).view(np.float32)

    rng = np.random.default_rng(spec["seed"])
    H, F, V = spec["hidden"], spec["ffn"], spec["vocab"]
    nh, nkv, hd = spec["heads"], spec["kv_heads"], spec["head_dim"]
    w = {"model.embed_tokens.weight": bf16(STD * rng.standard_normal((V, H)))}
    for i in range(spec["layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = bf16(1 + 0.1 * rng.standard_normal(H))
        w[p + "post_attention_layernorm.weight"] = bf16(1 + 0.1 * rng.standard_normal(H))
        w[p + "self_attn.q_proj.weight"] = bf16(spec["qk_std"] * rng.standard_normal((nh * hd, H)))
        w[p + "self_attn.k_proj.weight"] = bf16(spec["qk_std"] * rng.standard_normal((nkv * hd, H)))
        w[p + "self_attn.v_proj.weight"] = bf16(STD * rng.standard_normal((nkv * hd, H)))
        w[p + "self_attn.o_proj.weight"] = bf16(STD * rng.standard_normal((H, nh * hd)))
        w[p + "mlp.gate_proj.weight"] = bf16(STD * rng.standard_normal((F, H)))
        w[p + "mlp.up_proj.weight"] = bf16(STD * rng.standard_normal((F, H)))
        w[p + "mlp.down_proj.weight"] = bf16(STD * rng.standard_normal((H, F)))
    w["model.norm.weight"] = bf16(1 + 0.1 * rng.standard_normal(H))
    if not spec["tied"]:
        w["lm_head.weight"] = bf16(STD * rng.standard_normal((V, H)))
    inv = 1.0 / spec["rope_theta"] ** (np.arange(0, hd, 2, dtype=np.float64) / hd)

    def rope(x, pos):
        ang = pos[:, None] * inv[None, :]
        c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        a, b = x[..., :hd // 2], x[..., hd // 2:]
        return np.concatenate([a * c - b * s, b * c + a * s], -1)

    def norm(x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + spec["eps"]) * g

    def forward(ids, last_only=False, lowp=False):
        r = (lambda a: bf16(a).astype(np.float64)) if lowp else (lambda a: a)
        T = len(ids)
        x = w["model.embed_tokens.weight"][ids].astype(np.float64)
        pos = np.arange(T, dtype=np.float64)
        mask = np.tril(np.ones((T, T), dtype=bool))
        for i in range(spec["layers"]):
            p = f"model.layers.{i}."
            h = r(norm(x, w[p + "input_layernorm.weight"]))
            q = r(rope((h @ w[p + "self_attn.q_proj.weight"].T).reshape(T, nh, hd), pos))
            k = r(rope((h @ w[p + "self_attn.k_proj.weight"].T).reshape(T, nkv, hd), pos))
            v = r((h @ w[p + "self_attn.v_proj.weight"].T).reshape(T, nkv, hd))
            out = np.empty((T, nh, hd))
            for j in range(nh):
                s = q[:, j] @ k[:, j // (nh // nkv)].T / np.sqrt(hd)
                s = np.where(mask, s, -np.inf)
                e = np.exp(s - s.max(-1, keepdims=True))
                out[:, j] = r(e / e.sum(-1, keepdims=True)) @ v[:, j // (nh // nkv)]
            x = x + r(out.reshape(T, nh * hd)) @ w[p + "self_attn.o_proj.weight"].T
            h = r(norm(x, w[p + "post_attention_layernorm.weight"]))
            g = h @ w[p + "mlp.gate_proj.weight"].T
            x = x + r(g / (1 + np.exp(-g)) * (h @ w[p + "mlp.up_proj.weight"].T)) @ \
                w[p + "mlp.down_proj.weight"].T
        head = w["model.embed_tokens.weight" if spec["tied"] else "lm_head.weight"]
        return r(norm(x[-1:] if last_only else x, w["model.norm.weight"])) @ head.T

    return w, forward


def numpy_reference(spec, model_dir, prompts):
    import numpy as np
    w, forward = numpy_model(spec)
    write_bf16_safetensors(os.path.join(model_dir, "model.safetensors"), w)
    with open(os.path.join(model_dir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(hf_config(spec), f, indent=1)
    prefill, decode, meta = [], [], []
    for ids in prompts:
        rows = forward(ids)
        prefill.append(rows)
        seq, steps, greedy, margins = list(ids), [rows[-1]], [], []
        for k in range(N_NEW):
            arg, margin = top2(steps[-1].tolist())
            greedy.append(arg)
            margins.append(margin)
            seq.append(arg)
            if k + 1 < N_NEW:
                steps.append(forward(seq, last_only=True)[-1])
        decode.append(np.stack(steps))
        meta.append({"ids": ids, "greedy": greedy, "margins": margins})

    def as_bytes(arrs):
        return b"".join(a.astype("<f4").tobytes() for a in arrs)

    return meta, as_bytes(prefill), as_bytes(decode), {"numpy": np.__version__, "device": "cpu"}


def estimate_bf16_error(name, lens):
    """Prints the bf16-rounded twin's logit error against float64 (hf_oracle.h's numbers)."""
    import numpy as np
    spec = model_spec(name, tiny=False)
    _, forward = numpy_model(spec)
    rel, worst = [], []
    for ids in prompts_for(spec, lens, spec["seed"]):
        ref, low = forward(ids), forward(ids, lowp=True)
        d = (low - low.mean(-1, keepdims=True)) - (ref - ref.mean(-1, keepdims=True))
        c = ref - ref.mean(-1, keepdims=True)
        rel += list(np.linalg.norm(d, axis=-1) / np.linalg.norm(c, axis=-1))
        worst += list(np.abs(d).max(-1) / c.std(-1))
    log(f"{name}: bf16 twin vs float64 over {len(rel)} rows: centered relative L2 median "
        f"{np.median(rel):.2e} max {max(rel):.2e}; max |error| / std max {max(worst):.3f}")


def write_bf16_safetensors(path, tensors):
    import numpy as np
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, a in tensors.items():
        raw = (np.asarray(a, np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()
        header[name] = {"dtype": "BF16", "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


# ----------------------------------------------------------------------------------------------
def make(name, args):
    spec = model_spec(name, args.tiny)
    model_dir = os.path.join(args.out, name)
    shutil.rmtree(model_dir, ignore_errors=True)
    os.makedirs(model_dir)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(args.tokenizer, f), model_dir)
    prompts = prompts_for(spec, TINY_PROMPT_LENS if args.tiny else PROMPT_LENS, spec["seed"])
    t0 = time.time()
    if args.backend == "torch":
        meta, prefill, decode, versions = torch_reference(spec, model_dir, prompts, args.device)
    else:
        meta, prefill, decode, versions = numpy_reference(spec, model_dir, prompts)
    n_tensors = check_saved(model_dir, spec)
    for suffix, blob in ((".prefill.f32", prefill), (".decode.f32", decode)):
        with open(os.path.join(args.out, name + suffix), "wb") as f:
            f.write(blob)
    ref = {
        "name": name, "model_dir": name, "vocab_size": spec["vocab"], "n_new": N_NEW,
        "weights": "bfloat16", "compute": "float32 (TF32 off, eager attention)",
        "backend": args.backend, "tiny": args.tiny, "spec": spec, "versions": versions,
        "prefill_logits": name + ".prefill.f32", "decode_logits": name + ".decode.f32",
        "prompts": meta,
    }
    with open(os.path.join(args.out, name + ".ref.json"), "w", encoding="utf-8") as f:
        json.dump(ref, f)
    margins = sorted(m for p in meta for m in p["margins"])
    repeats = sum(g == s for p in meta for g, s in zip(p["greedy"], [p["ids"][-1]] + p["greedy"]))
    log(f"{name}: {n_tensors} bf16 tensors, {len(meta)} prompts x {N_NEW} greedy steps in "
        f"{time.time() - t0:.1f} s ({versions}); top-2 margin min {margins[0]:.4f} median "
        f"{margins[len(margins) // 2]:.4f}; greedy token == previous token {repeats} times")
    return {"name": name, "dir": name, "ref": name + ".ref.json"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokenizer", required=True, help="folder with tokenizer.json and "
                    "tokenizer_config.json (tests/reference/export_gguf_tokenizer.py)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--backend", choices=["torch", "numpy"], default="torch")
    ap.add_argument("--tiny", action="store_true", help="small shapes (CPU checks)")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--estimate-bf16-error", action="store_true",
                    help="numpy only: print the bf16 twin's logit error at full shapes and exit")
    args = ap.parse_args()
    if args.estimate_bf16_error:
        for n in args.models.split(","):
            estimate_bf16_error(n, [64, 600])
        return 0
    if args.backend == "numpy" and not args.tiny:
        ap.error("--backend numpy needs --tiny (it is for checks without torch)")
    if args.backend == "torch" and args.device.startswith("cuda"):
        import torch
        if not torch.cuda.is_available():
            log("torch sees no CUDA device")
            return 2
    os.makedirs(args.out, exist_ok=True)
    entries = [make(n, args) for n in args.models.split(",")]
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump({"models": entries}, f, indent=1)
    log(f"wrote {args.out}/manifest.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
