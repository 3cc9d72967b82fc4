#!/usr/bin/env python3
"""Makes tiny random HF models of the Llama family beyond plain Llama, and what HF transformers
computes for them in f32 — the oracles of tests/unit/graph/tiny_variants_test.cpp:

  tests/fixtures/tiny_qwen2/       Qwen2ForCausalLM: q/k/v biases, tied LM head, eps 1e-6
  tests/fixtures/tiny_mistral_sw/  MistralForCausalLM with sliding_window 7, prompts far longer
  tests/fixtures/tiny_llama3_rope/ LlamaForCausalLM with rope_scaling rope_type llama3 (factor 8,
                                   original_max_position_embeddings 32), positions up to 99

Run: /work/refvenv/bin/python tests/reference/make_tiny_variants.py
(the venv: python3 -m venv /work/refvenv && /work/refvenv/bin/pip install torch transformers
safetensors numpy). Each folder gets config.json, model.safetensors, expected.json
({"vocab_size", "sequences": [[ids...], ...], "greedy_prompt", "greedy_tokens",
"greedy_min_margin", "transformers"}) and expected_logits.f32 (every position of every sequence,
[sum(len), vocab] float32 LE). Attention is "eager" so that transformers applies the sliding
window in its mask; the script checks that the window changes the logits (else it fails).
Deterministic: seeded, and transformers' own init is overwritten by seeded draws.
"""
import json
import pathlib

import numpy as np
import torch
import transformers
from transformers import (LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM,
                          Qwen2Config, Qwen2ForCausalLM)

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
COMMON = dict(vocab_size=300, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, bos_token_id=1, eos_token_id=2)


def randomize(model, seed):
    # Larger than the default 0.02 init so attention is far from uniform and RoPE matters.
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.5 * torch.randn_like(p))  # biases large enough to matter
            else:
                p.copy_(0.15 * torch.randn_like(p))


def logits_of(model, seq):
    with torch.no_grad():
        return model(torch.tensor([seq])).logits[0].float().numpy()


def greedy(model, prompt, steps):
    """Greedy continuation by repeated full forwards (no cache: the plain masked path)."""
    seq, margins = list(prompt), []
    for _ in range(steps):
        last = logits_of(model, seq)[-1]
        top = np.sort(last)[-2:]
        margins.append(float(top[1] - top[0]))
        seq.append(int(np.argmax(last)))
    return seq[len(prompt):], min(margins)


def write(name, model, lengths, greedy_prompt_len, greedy_steps, check=None):
    out = FIXTURES / name
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    (out / "generation_config.json").unlink(missing_ok=True)
    gen = torch.Generator().manual_seed(99)
    V = model.config.vocab_size
    seqs = [torch.randint(3, V, (n,), generator=gen).tolist() for n in lengths]
    rows = [logits_of(model, s) for s in seqs]
    if check is not None:
        check(seqs, rows)
    np.concatenate(rows).astype("<f4").tofile(out / "expected_logits.f32")
    prompt = torch.randint(3, V, (greedy_prompt_len,), generator=gen).tolist()
    tokens, margin = greedy(model, prompt, greedy_steps)
    (out / "expected.json").write_text(json.dumps({
        "vocab_size": V, "sequences": seqs, "greedy_prompt": prompt, "greedy_tokens": tokens,
        "greedy_min_margin": margin, "transformers": transformers.__version__}) + "\n")
    print(f"wrote {out} (greedy min margin {margin:.3g})")


def qwen2():
    torch.manual_seed(2001)
    cfg = Qwen2Config(**COMMON, max_position_embeddings=512, rms_norm_eps=1e-6,
                      rope_theta=1000000.0, tie_word_embeddings=True, use_sliding_window=False,
                      attn_implementation="eager")
    model = Qwen2ForCausalLM(cfg).eval()
    randomize(model, 2002)
    assert model.model.layers[0].self_attn.q_proj.bias is not None, "qwen2 has q/k/v biases"
    write("tiny_qwen2", model, [1, 7, 20, 45], 10, 24)


def mistral_sw():
    window = 7
    torch.manual_seed(3001)
    cfg = MistralConfig(**COMMON, max_position_embeddings=512, rms_norm_eps=1e-5,
                        rope_theta=10000.0, tie_word_embeddings=False, sliding_window=window,
                        attn_implementation="eager")
    model = MistralForCausalLM(cfg).eval()
    randomize(model, 3002)

    def check(seqs, rows):
        # The same weights without the window: positions >= window must differ, earlier ones
        # not, or transformers did not apply the window (and the fixture would prove nothing).
        full_cfg = MistralConfig(**{**cfg.to_dict(), "sliding_window": None})
        full = MistralForCausalLM(full_cfg).eval()
        full.load_state_dict(model.state_dict())
        for s, r in zip(seqs, rows):
            f = logits_of(full, s)
            assert np.abs(f[:window] - r[:window]).max() < 1e-5, "window cut a short context"
            if len(s) > window:
                d = np.abs(f[window:] - r[window:]).max()
                assert d > 1e-2, f"transformers ignored sliding_window (max diff {d})"
                print(f"  mistral: {len(s)} tokens, windowed vs full max |diff| {d:.3g}")

    write("tiny_mistral_sw", model, [5, 20, 60], 12, 30, check)


def llama3_rope():
    rope = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 32}
    torch.manual_seed(4001)
    cfg = LlamaConfig(**COMMON, max_position_embeddings=512, rms_norm_eps=1e-5,
                      rope_theta=10000.0, rope_scaling=rope, tie_word_embeddings=False,
                      attn_implementation="eager")
    model = LlamaForCausalLM(cfg).eval()
    randomize(model, 4002)
    # head_dim 16, theta 1e4: wavelengths 6.3 .. 19869, so the three llama3 bands (kept < 8,
    # smoothed 8..32, divided by 8 > 32) are all present.
    write("tiny_llama3_rope", model, [3, 40, 100], 30, 40)


if __name__ == "__main__":
    torch.set_num_threads(2)
    qwen2()
    mistral_sw()
    llama3_rope()
