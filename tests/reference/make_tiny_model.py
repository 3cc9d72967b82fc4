#!/usr/bin/env python3
"""Makes tests/fixtures/tiny_llama/: a tiny random Llama (HF safetensors, F32, untied LM head,
halves RoPE) and the logits HF transformers computes for it in f32 — the oracle for the graph's
safetensors / halves-RoPE path.

Run: /work/refvenv/bin/python tests/reference/make_tiny_model.py
Writes config.json, model.safetensors, expected.json ({"sequences": [[ids...], ...]}) and
expected_logits.f32 (every position of every sequence, [sum(len), vocab] float32 LE).
"""
import json
import pathlib

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM

OUT = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "tiny_llama"


def main():
    torch.manual_seed(1234)
    torch.set_num_threads(2)
    cfg = LlamaConfig(
        vocab_size=300,
        hidden_size=64,
        intermediate_size=160,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=False,
        bos_token_id=1,
        eos_token_id=2,
        torch_dtype="float32",
    )
    model = LlamaForCausalLM(cfg).eval()
    # Larger than the default 0.02 init so attention is far from uniform and RoPE matters.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(0.15 * torch.randn_like(p))
    OUT.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(OUT, safe_serialization=True)
    for extra in ("generation_config.json",):
        (OUT / extra).unlink(missing_ok=True)

    gen = torch.Generator().manual_seed(99)
    lengths = [1, 7, 20, 45]
    seqs = [torch.randint(3, cfg.vocab_size, (n,), generator=gen).tolist() for n in lengths]
    rows = []
    with torch.no_grad():
        for s in seqs:
            logits = model(torch.tensor([s])).logits[0].float().numpy()
            rows.append(logits)
    np.concatenate(rows).astype("<f4").tofile(OUT / "expected_logits.f32")
    (OUT / "expected.json").write_text(json.dumps({"vocab_size": cfg.vocab_size, "sequences": seqs}) + "\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
