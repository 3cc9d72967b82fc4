#!/usr/bin/env python3
"""Makes tests/fixtures/tiny_kquant/ and tiny_kquant_q5_k_m/: a tiny random Llama converted to GGUF
and quantized to Q4_K_M (Q4_K + Q6_K tensors) and Q5_K_M (Q5_K + Q6_K) by llama.cpp's own tools,
and the oracle for each: the logits HF transformers computes in
f32 on the weights of that GGUF dequantized by the `gguf` Python package (PyPI). The test
(tests/unit/graph/tiny_kquant_test.cpp) runs our K-quant kernels on the GGUF and compares.

Sizes are multiples of 256 (K-quant super-blocks): hidden 256, intermediate 512, vocab 512.

Run (llama.cpp's convert_hf_to_gguf.py and a llama-quantize binary are needed at generation time
only; the test needs neither):
  /work/refvenv/bin/python tests/reference/make_kquant_gguf.py \
      --llama-cpp /path/to/llama.cpp --quantize /path/to/llama-quantize
(venv: torch transformers safetensors numpy gguf sentencepiece.) A llama-quantize can be built
from the llama.cpp tree against its installed libraries, e.g.
  g++ -O1 -std=c++17 -I include -I common -I ggml/include -I tools/quantize \
      tools/quantize/quantize.cpp tools/quantize/main.cpp -L$LIB -lllama-common -lllama -lggml \
      -lggml-base -Wl,-rpath,$LIB -o llama-quantize
Writes (in each folder) model.gguf, expected.json ({"vocab_size", "sequences", "greedy_prompt", "greedy_tokens",
"greedy_min_margin", "tensor_types", "quant"}) and expected_logits.f32 ([sum(len), vocab] f32 LE).
Deterministic: seeded weights, a tokenizer trained single-threaded on seeded text.
"""
import argparse
import io
import json
import os
import pathlib
import random
import subprocess
import sys
import tempfile

import gguf
import numpy as np
import sentencepiece as spm
import torch
from transformers import LlamaConfig, LlamaForCausalLM

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
QUANTS = {"Q4_K_M": "tiny_kquant", "Q5_K_M": "tiny_kquant_q5_k_m"}


def make_model():
    torch.manual_seed(5001)
    cfg = LlamaConfig(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
                      bos_token_id=1, eos_token_id=2, attn_implementation="eager")
    model = LlamaForCausalLM(cfg).eval()
    torch.manual_seed(5002)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(0.08 * torch.randn_like(p))  # fan-in 256..512: activations stay O(1)
    return model


def train_tokenizer(path):
    """A 300-piece SentencePiece model on seeded pseudo-words: convert_hf_to_gguf needs a vocab
    (the GGUF pads it to vocab_size 512)."""
    rng = random.Random(7)
    letters = "etaoinshrdlucmfwypvbgkjqxz"
    words = ["".join(rng.choice(letters[:rng.randint(6, 26)]) for _ in range(rng.randint(1, 8)))
             for _ in range(4000)]
    lines = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(3000)]
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=buf,
                                   vocab_size=300, model_type="unigram", num_threads=1,
                                   hard_vocab_limit=False, bos_id=1, eos_id=2, unk_id=0,
                                   pad_id=-1, seed_sentencepiece_size=100000)
    path.write_bytes(buf.getvalue())


def unpermute(w, n_head):
    """Inverse of convert_hf_to_gguf's Q/K row permutation (halves RoPE -> adjacent pairs)."""
    return (w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def hf_state_from_gguf(path, cfg):
    """HF state dict from a GGUF, every tensor dequantized to f32 by the gguf package."""
    reader = gguf.GGUFReader(str(path))
    sd, types = {}, {}
    names = {"token_embd.weight": "model.embed_tokens.weight", "output.weight": "lm_head.weight",
             "output_norm.weight": "model.norm.weight"}
    per_layer = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
                 "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
                 "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
                 "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm"}
    for t in reader.tensors:
        ne = [int(x) for x in t.shape]
        arr = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        arr = arr.reshape(list(reversed(ne)))
        types[t.name] = t.tensor_type.name
        if t.name in names:
            hf = names[t.name]
        else:
            _, layer, kind, _ = t.name.split(".")
            hf = f"model.layers.{layer}.{per_layer[kind]}.weight"
            if kind == "attn_q":
                arr = unpermute(arr, cfg.num_attention_heads)
            elif kind == "attn_k":
                arr = unpermute(arr, cfg.num_key_value_heads)
        sd[hf] = torch.from_numpy(arr.copy())
    return sd, types


def logits_of(model, seq):
    with torch.no_grad():
        return model(torch.tensor([seq])).logits[0].float().numpy()


def greedy(model, prompt, steps):
    seq, margins = list(prompt), []
    for _ in range(steps):
        last = logits_of(model, seq)[-1]
        top = np.sort(last)[-2:]
        margins.append(float(top[1] - top[0]))
        seq.append(int(np.argmax(last)))
    return seq[len(prompt):], min(margins)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-cpp", required=True, help="llama.cpp source tree")
    ap.add_argument("--quantize", required=True, help="llama-quantize binary")
    args = ap.parse_args()
    torch.set_num_threads(2)
    model = make_model()
    gen = torch.Generator().manual_seed(99)
    seqs = [torch.randint(3, 512, (n,), generator=gen).tolist() for n in (1, 9, 33)]
    prompt = torch.randint(3, 512, (8,), generator=gen).tolist()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        hf_dir = tmp / "hf"
        model.save_pretrained(hf_dir, safe_serialization=True)
        train_tokenizer(hf_dir / "tokenizer.model")
        f32 = tmp / "f32.gguf"
        subprocess.run([sys.executable, str(pathlib.Path(args.llama_cpp) / "convert_hf_to_gguf.py"),
                        str(hf_dir), "--outtype", "f32", "--outfile", str(f32)], check=True,
                       env={k: v for k, v in os.environ.items() if k != "NO_LOCAL_GGUF"})
        # Sanity of the name mapping and un-permutation: the f32 GGUF gives HF's logits back.
        sd, _ = hf_state_from_gguf(f32, model.config)
        back = LlamaForCausalLM(model.config).eval()
        back.load_state_dict(sd)
        for s in seqs:
            d = np.abs(logits_of(back, s) - logits_of(model, s)).max()
            assert d < 1e-5, f"f32 GGUF round trip differs by {d}"
        for quant, name in QUANTS.items():
            out = FIXTURES / name
            out.mkdir(parents=True, exist_ok=True)
            subprocess.run([args.quantize, str(f32), str(out / "model.gguf"), quant, "1"],
                           check=True)
            write_oracle(model, out, quant, seqs, prompt)


def write_oracle(model, out, quant, seqs, prompt):
    sd, types = hf_state_from_gguf(out / "model.gguf", model.config)
    deq = LlamaForCausalLM(model.config).eval()
    deq.load_state_dict(sd)
    rows = [logits_of(deq, s) for s in seqs]
    np.concatenate(rows).astype("<f4").tofile(out / "expected_logits.f32")
    tokens, margin = greedy(deq, prompt, 24)
    drift = max(np.abs(r - logits_of(model, s)).max() for r, s in zip(rows, seqs))
    (out / "expected.json").write_text(json.dumps({
        "vocab_size": 512, "sequences": seqs, "greedy_prompt": prompt, "greedy_tokens": tokens,
        "greedy_min_margin": margin, "tensor_types": types, "quant": quant,
        "max_abs_logit_change_from_quantization": float(drift)}, indent=1) + "\n")
    print(f"wrote {out}: {sorted(set(types.values()))}, quantization moved logits by up to "
          f"{drift:.3g}, greedy min margin {margin:.3g}")


if __name__ == "__main__":
    main()
