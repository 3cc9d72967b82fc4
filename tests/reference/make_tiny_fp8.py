#!/usr/bin/env python3
"""Makes tiny random FP8 e4m3 Llama checkpoints in the layouts the published -FP8 releases use,
and what HF transformers computes for them — the oracles of tests/unit/graph/tiny_fp8_test.cpp:

  tests/fixtures/tiny_fp8/bf16/     the source: LlamaForCausalLM with bf16 weights (hidden 128,
                                    4 heads of 32, 4 kv heads, ffn 256, 2 layers, vocab 256,
                                    untied LM head); model.quantize fp8 starts from it
  tests/fixtures/tiny_fp8/block/    transformers' FineGrainedFP8 / Qwen3-FP8 / DeepSeek-V3 layout:
                                    quantization_config {"quant_method": "fp8", "fmt": "e4m3",
                                    "activation_scheme": "dynamic", "weight_block_size": [128,
                                    128]}; each linear weight F8_E4M3 [N, K] and
                                    `<module>.weight_scale_inv` F32 [ceil(N/128), ceil(K/128)]
  tests/fixtures/tiny_fp8/channel/  llm-compressor's compressed-tensors FP8 (RedHatAI -FP8-dynamic)
                                    layout: quantization_config {"quant_method":
                                    "compressed-tensors", "format": "float-quantized",
                                    "config_groups": {"group_0": {"weights": {"num_bits": 8,
                                    "type": "float", "strategy": "channel", ...}}}, "ignore":
                                    ["lm_head"]}; `<module>.weight_scale` BF16 [N, 1]

The embeddings, norms and the LM head stay bf16 (the published files leave lm_head unconverted).

Quantization rules (per block of the scale grid, w the bf16 weight as f32):
  block:   s = max|w| / 448 (f32; 1 for an all-zero block), q = e4m3(w / s), s stored as f32 —
           DeepSeek-V3's block rule; llmserve's model.quantize fp8 applies the same one, so its
           quantization of bf16/ must give block/'s bytes.
  channel: s = bf16(max|w| / 448) per output row (the stored bf16 scale), q = e4m3(w / s) — the
           min-max observer's symmetric rule of compressed-tensors' "channel" strategy.
  e4m3(x): torch's float32 -> float8_e4m3fn cast (round to nearest even) of clamp(x, -448, 448).

Each variant folder gets config.json, model.safetensors, expected.json ({"vocab_size",
"sequences", "greedy_prompt", "greedy_tokens", "greedy_min_margin", "transformers",
"direct_load"}) and expected_logits.f32 (every position of every sequence, [sum(len), vocab] f32
LE): transformers' LlamaForCausalLM in f32 with each linear weight replaced by its dequantized
value q.float() * s (one f32 product, broadcast over the block). block/ is also loaded by
transformers itself (FineGrainedFP8Config(dequantize=True), which dequantizes on the CPU); when
that works its logits must equal the dequantized model's within 1e-5 and "direct_load" says so.

tests/fixtures/tiny_fp8/e4m3_cast.bin holds torch's float32 -> e4m3 casts (write_cast_table).

Run: .venv-ref/bin/python tests/reference/make_tiny_fp8.py   (venv: torch transformers
safetensors numpy accelerate compressed-tensors). Deterministic: seeded.
"""
import json
import pathlib
import shutil
import sys

import numpy as np
import torch
import transformers
from safetensors.torch import load_file, save_file
from transformers import LlamaConfig, LlamaForCausalLM

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_tiny_variants import greedy, logits_of, randomize  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "tiny_fp8"
FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0
BLOCK = 128
LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def is_linear(name):
    return name.endswith(".weight") and any(f".{p}." in name for p in LINEAR)


def e4m3(x):
    return torch.clamp(x, -FP8_MAX, FP8_MAX).to(FP8)


def quantize_block(w):
    """w [N, K] f32 -> (q [N, K] e4m3, s [ceil(N/128), ceil(K/128)] f32); ragged edge blocks."""
    N, K = w.shape
    gr, gc = -(-N // BLOCK), -(-K // BLOCK)
    q = torch.empty(N, K, dtype=FP8)
    s = torch.empty(gr, gc, dtype=torch.float32)
    for i in range(gr):
        for j in range(gc):
            blk = w[i * BLOCK:(i + 1) * BLOCK, j * BLOCK:(j + 1) * BLOCK]
            amax = blk.abs().max()
            scale = amax / torch.tensor(FP8_MAX) if amax > 0 else torch.tensor(1.0)
            s[i, j] = scale
            q[i * BLOCK:(i + 1) * BLOCK, j * BLOCK:(j + 1) * BLOCK] = e4m3(blk / s[i, j])
    return q, s


def dequantize_block(q, s):
    full = s.repeat_interleave(BLOCK, 0).repeat_interleave(BLOCK, 1)[:q.shape[0], :q.shape[1]]
    return q.float() * full


def quantize_channel(w):
    """w [N, K] f32 -> (q [N, K] e4m3, s [N, 1] bf16)."""
    s = (w.abs().amax(dim=1, keepdim=True) / torch.tensor(FP8_MAX)).to(torch.bfloat16)
    return e4m3(w / s.float()), s


def dequantize_channel(q, s):
    return q.float() * s.float()


def model_with(config, state):
    m = LlamaForCausalLM(config).float().eval()
    m.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    return m


def write_oracle(folder, model, seqs, prompt, steps, extra):
    rows = [logits_of(model, s) for s in seqs]
    np.concatenate(rows).astype("<f4").tofile(folder / "expected_logits.f32")
    tokens, margin = greedy(model, prompt, steps)
    meta = {"vocab_size": model.config.vocab_size, "sequences": seqs, "greedy_prompt": prompt,
            "greedy_tokens": tokens, "greedy_min_margin": margin,
            "transformers": transformers.__version__, **extra}
    (folder / "expected.json").write_text(json.dumps(meta) + "\n")
    return rows


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    config = LlamaConfig(vocab_size=256, hidden_size=128, intermediate_size=256,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                         max_position_embeddings=512, bos_token_id=1, eos_token_id=2,
                         tie_word_embeddings=False, attn_implementation="eager")
    src = LlamaForCausalLM(config).eval()
    randomize(src, 52)
    src = src.to(torch.bfloat16)
    (OUT / "bf16").mkdir(parents=True)
    src.save_pretrained(OUT / "bf16", safe_serialization=True)
    (OUT / "bf16" / "generation_config.json").unlink(missing_ok=True)
    state = load_file(OUT / "bf16" / "model.safetensors")

    gen = torch.Generator().manual_seed(7)
    seqs = [torch.randint(3, 256, (n,), generator=gen).tolist() for n in (1, 9, 23, 40)]
    prompt = torch.randint(3, 256, (10,), generator=gen).tolist()
    steps = 24

    cfg = json.loads((OUT / "bf16" / "config.json").read_text())
    variants = {
        "block": (quantize_block, dequantize_block, ".weight_scale_inv",
                  {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                   "weight_block_size": [BLOCK, BLOCK]}),
        "channel": (quantize_channel, dequantize_channel, ".weight_scale",
                    {"quant_method": "compressed-tensors", "format": "float-quantized",
                     "quantization_status": "compressed", "ignore": ["lm_head"],
                     "config_groups": {"group_0": {
                         "targets": ["Linear"],
                         "weights": {"num_bits": 8, "type": "float", "symmetric": True,
                                     "strategy": "channel", "dynamic": False,
                                     "observer": "minmax"},
                         "input_activations": {"num_bits": 8, "type": "float",
                                               "symmetric": True, "strategy": "token",
                                               "dynamic": True}}}}),
    }
    for name, (quantize, dequantize, scale_suffix, qcfg) in variants.items():
        folder = OUT / name
        folder.mkdir()
        stored, deq = {}, {}
        for key, w in state.items():
            if is_linear(key):
                q, s = quantize(w.float())
                stored[key] = q
                stored[key[:-len(".weight")] + scale_suffix] = s.contiguous()
                deq[key] = dequantize(q, s)
            else:
                stored[key] = w
                deq[key] = w
        save_file(stored, folder / "model.safetensors", metadata={"format": "pt"})
        (folder / "config.json").write_text(
            json.dumps({**cfg, "quantization_config": qcfg}, indent=2) + "\n")
        model = model_with(config, deq)
        extra = {}
        if name == "block":
            extra["direct_load"] = direct_load_matches(folder, model, seqs)
        else:
            extra["direct_load"] = compressed_tensors_weights_match(folder, stored)
        write_oracle(folder, model, seqs, prompt, steps, extra)
        print(name, "written", extra)
    write_oracle(OUT / "bf16", model_with(config, state), seqs, prompt, steps, {})
    write_cast_table(OUT / "e4m3_cast.bin")


def write_cast_table(path):
    """torch's float32 -> float8_e4m3fn cast, the oracle of kernels::float_to_fp8_e4m3: n (u32 LE),
    n f32 inputs, n e4m3 bytes. Inputs: every finite e4m3 value, every midpoint between two
    neighbours (ties: round to even), values a hair either side of those midpoints, and 4096
    log-uniform magnitudes from 2^-12 to 448 with random signs (subnormals and normals)."""
    codes = torch.arange(256, dtype=torch.uint8).view(FP8).float()
    finite = torch.sort(torch.unique(codes[torch.isfinite(codes)]))[0]
    mids = (finite[1:] + finite[:-1]) / 2
    up = torch.nextafter(mids, torch.full_like(mids, 1e9))
    down = torch.nextafter(mids, torch.full_like(mids, -1e9))
    gen = torch.Generator().manual_seed(11)
    mag = torch.exp2(torch.rand(4096, generator=gen) * (np.log2(448.0) + 12) - 12)
    sign = torch.where(torch.rand(4096, generator=gen) < 0.5, -1.0, 1.0)
    x = torch.cat([finite, mids, up, down, mag * sign]).float()
    x = x[x.abs() <= 448.0]
    q = x.to(FP8).view(torch.uint8)
    with open(path, "wb") as f:
        f.write(np.uint32(x.numel()).tobytes())
        f.write(x.numpy().astype("<f4").tobytes())
        f.write(q.numpy().tobytes())


def direct_load_matches(folder, model, seqs):
    """transformers' own FP8 loader (dequantize=True: the CPU path) against the dequantized model;
    returns the max |diff| of the logits, or the error that stopped it."""
    try:
        cfg = transformers.FineGrainedFP8Config(dequantize=True, weight_block_size=(BLOCK, BLOCK))
        m = LlamaForCausalLM.from_pretrained(folder, quantization_config=cfg,
                                             dtype=torch.float32).eval()
        diff = max(float(np.abs(logits_of(m, s) - logits_of(model, s)).max()) for s in seqs)
    except Exception as e:  # noqa: BLE001 - recorded in expected.json, not hidden
        return {"error": f"{type(e).__name__}: {e}"[:300]}
    if diff > 1e-5:
        raise SystemExit(f"transformers' FP8 loader differs from the dequantized model: {diff}")
    return {"max_abs_diff": diff}


def compressed_tensors_weights_match(folder, stored):
    """transformers + compressed-tensors' own loader (dequantize=True) decompresses each linear
    weight in the scale's dtype, bf16(q * s); check that it reads the same q and s as the fixture
    (every linear weight equal to bf16(q.float() * s.float())). The oracle logits use the exact
    f32 product instead, as llmserve does (and as vLLM's per-channel epilogue scales in f32)."""
    try:
        cfg = transformers.CompressedTensorsConfig(dequantize=True)
        m = LlamaForCausalLM.from_pretrained(folder, quantization_config=cfg,
                                             dtype=torch.float32).eval()
    except Exception as e:  # noqa: BLE001 - recorded in expected.json, not hidden
        return {"error": f"{type(e).__name__}: {e}"[:300]}
    params = dict(m.named_parameters())
    checked = 0
    for key, q in stored.items():
        if q.dtype != FP8:
            continue
        s = stored[key[:-len(".weight")] + ".weight_scale"]
        want = (q.float() * s.float()).to(torch.bfloat16).float()
        if not torch.equal(params[key].detach().float(), want):
            raise SystemExit(f"compressed-tensors reads {key} differently")
        checked += 1
    return {"weights_equal_bf16_of_q_times_s": checked}


if __name__ == "__main__":
    main()
