#!/usr/bin/env python3
"""Makes tiny random HF models of the families beyond the Llama layout, what HF transformers
computes for them in f32, and (with --llama-cpp) their GGUF by llama.cpp's own converter — the
oracles of tests/unit/graph/tiny_families_test.cpp:

  tests/fixtures/tiny_qwen3/   Qwen3ForCausalLM: q/k RMSNorm per head, head_dim 32 != 64 / 4,
                               tied LM head
  tests/fixtures/tiny_gemma3/  Gemma3ForCausalLM (text): sqrt(hidden)-scaled embeddings, GeGLU
                               (tanh GELU), four (1 + w) norms per layer, q/k norm, hidden 48,
                               2 heads of head_dim 32 (not 48 / 2), 1 kv head,
                               layers 0-4 local (sliding_window 6, rope_theta 10000) and layer 5
                               global (rope_theta 1e6, linear scaling 2), final-logit soft-cap 6,
                               query_pre_attn_scalar 20 (not head_dim)
  tests/fixtures/tiny_phi3/    Phi3ForCausalLM: fused qkv_proj and gate_up_proj, partial rotary
                               factor 0.75, longrope (short/long factors, original context 32)

Each folder gets config.json, model.safetensors, expected.json ({"vocab_size", "sequences",
"greedy_prompt", "greedy_tokens", "greedy_min_margin", "transformers", ...}) and
expected_logits.f32 (every position of every sequence, [sum(len), vocab] float32 LE).
With --llama-cpp SRC it also writes model.gguf (convert_hf_to_gguf.py --outtype f32, after a
300-piece SentencePiece tokenizer is added to a copy of the HF folder) and, where the GGUF
cannot carry a setting, the logits transformers computes for the model the GGUF describes
(gemma3: llama.cpp derives the attention scale from head_dim, so expected_logits_gguf.f32 is for
query_pre_attn_scalar = head_dim). With --llama-server BIN, llama.cpp's greedy tokens for the
greedy prompt on model.gguf (llama-server /completion with token ids, top_k 1, context 256) go
into expected.json as "llamacpp_greedy_tokens" (Phi-3: a context of 256 > 32 takes the long
factors in llama.cpp, and in the test, which runs ours with the same context).

Phi-3 longrope: transformers uses the long factors when the sequence exceeds
original_max_position_embeddings (32) and the short ones otherwise, so sequences are either
<= 32 tokens ("sequences") or longer ("long_sequences", expected_logits_long.f32).

Run: /work/refvenv/bin/python tests/reference/make_tiny_families.py \
        [--llama-cpp .deps/llama.cpp-0.3.36/src] [--llama-server .../llama-server]
(venv: torch transformers safetensors numpy gguf sentencepiece). Deterministic: seeded.
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np
import torch
import transformers
from transformers import (Gemma3ForCausalLM, Gemma3TextConfig, Phi3Config, Phi3ForCausalLM,
                          Qwen3Config, Qwen3ForCausalLM)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_kquant_gguf import train_tokenizer  # noqa: E402
from make_tiny_variants import greedy, logits_of, randomize  # noqa: E402

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
COMMON = dict(vocab_size=300, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
              bos_token_id=1, eos_token_id=2, attn_implementation="eager")


def sequences(V, lengths, gen):
    return [torch.randint(3, V, (n,), generator=gen).tolist() for n in lengths]


def write_logits(path, model, seqs):
    rows = [logits_of(model, s) for s in seqs]
    np.concatenate(rows).astype("<f4").tofile(path)
    return rows


def convert(model_dir, out, llama_cpp):
    with tempfile.TemporaryDirectory() as tmp:
        hf = pathlib.Path(tmp) / "hf"
        shutil.copytree(model_dir, hf, ignore=shutil.ignore_patterns("expected*", "*.gguf"))
        train_tokenizer(hf / "tokenizer.model")
        subprocess.run([sys.executable, str(pathlib.Path(llama_cpp) / "convert_hf_to_gguf.py"),
                        str(hf), "--outtype", "f32", "--outfile", str(out)], check=True,
                       env={k: v for k, v in os.environ.items() if k != "NO_LOCAL_GGUF"},
                       stdout=subprocess.DEVNULL)


def llamacpp_greedy(server, gguf_path, prompt, steps):
    port = 18639
    proc = subprocess.Popen([server, "-m", str(gguf_path), "--port", str(port), "-c", "256",
                             "-t", "2", "--no-warmup"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except Exception:
                time.sleep(0.3)
        body = json.dumps({"prompt": prompt, "n_predict": steps, "top_k": 1, "temperature": 0,
                           "samplers": ["top_k"], "ignore_eos": True, "cache_prompt": False,
                           "return_tokens": True}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/completion", data=body,
                                     headers={"Content-Type": "application/json"})
        out = json.loads(urllib.request.urlopen(req, timeout=60).read())
        return out["tokens"]
    finally:
        proc.terminate()
        proc.wait()


def finish(name, model, meta, lengths, greedy_len, steps, args, gguf_model=None, long_lengths=()):
    out = FIXTURES / name
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    (out / "generation_config.json").unlink(missing_ok=True)
    gen = torch.Generator().manual_seed(99)
    V = model.config.vocab_size
    seqs = sequences(V, lengths, gen)
    write_logits(out / "expected_logits.f32", model, seqs)
    prompt = torch.randint(3, V, (greedy_len,), generator=gen).tolist()
    tokens, margin = greedy(model, prompt, steps)
    meta.update({"vocab_size": V, "sequences": seqs, "greedy_prompt": prompt,
                 "greedy_tokens": tokens, "greedy_min_margin": margin,
                 "transformers": transformers.__version__})
    if long_lengths:
        long_seqs = sequences(V, long_lengths, gen)
        write_logits(out / "expected_logits_long.f32", model, long_seqs)
        meta["long_sequences"] = long_seqs
    if args.llama_cpp:
        gguf_path = out / "model.gguf"
        src = out
        if gguf_model is not None:  # what the GGUF can express: its own HF twin and oracle
            with tempfile.TemporaryDirectory() as tmp:
                gguf_model.save_pretrained(tmp, safe_serialization=True)
                convert(tmp, gguf_path, args.llama_cpp)
            write_logits(out / "expected_logits_gguf.f32", gguf_model, seqs)
            g_tokens, g_margin = greedy(gguf_model, prompt, steps)
            meta.update({"gguf_greedy_tokens": g_tokens, "gguf_greedy_min_margin": g_margin})
        else:
            convert(src, gguf_path, args.llama_cpp)
        if args.llama_server:
            ref = meta.get("gguf_greedy_tokens", tokens)
            meta["llamacpp_greedy_tokens"] = llamacpp_greedy(args.llama_server, gguf_path,
                                                             prompt, len(ref))
            print(f"  llama.cpp greedy equals transformers: {meta['llamacpp_greedy_tokens'] == ref}")
    (out / "expected.json").write_text(json.dumps(meta) + "\n")
    print(f"wrote {out} (greedy min margin {margin:.3g})")


def qwen3(args):
    torch.manual_seed(6001)
    cfg = Qwen3Config(**COMMON, intermediate_size=128, num_hidden_layers=2, head_dim=32,
                      max_position_embeddings=512, rms_norm_eps=1e-6, rope_theta=1000000.0,
                      tie_word_embeddings=True, attention_bias=False)
    model = Qwen3ForCausalLM(cfg).eval()
    randomize(model, 6002)
    assert model.model.layers[0].self_attn.q_norm.weight.shape == (32,)
    finish("tiny_qwen3", model, {}, [1, 7, 20, 45], 10, 24, args)


def gemma3_config(qpas):
    layer_types = ["sliding_attention"] * 5 + ["full_attention"]
    shape = {**COMMON, "hidden_size": 48, "num_attention_heads": 2, "num_key_value_heads": 1}
    return Gemma3TextConfig(
        **shape, intermediate_size=64, num_hidden_layers=6, head_dim=32,
        max_position_embeddings=512, rms_norm_eps=1e-6, sliding_window=6,
        layer_types=layer_types, query_pre_attn_scalar=qpas, final_logit_softcapping=6.0,
        tie_word_embeddings=True,
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                         "full_attention": {"rope_type": "linear", "factor": 2.0,
                                            "rope_theta": 1000000.0}})


def gemma3(args):
    torch.manual_seed(7001)
    model = Gemma3ForCausalLM(gemma3_config(20)).eval()
    torch.manual_seed(7002)
    with torch.no_grad():
        for name, p in model.named_parameters():
            # Gemma's norms multiply by (1 + w): w near 0.
            p.copy_((0.1 if "norm" in name else 0.15) * torch.randn_like(p))
    twin = Gemma3ForCausalLM(gemma3_config(32)).eval()  # query_pre_attn_scalar = head_dim
    twin.load_state_dict(model.state_dict())
    gen = torch.Generator().manual_seed(5)
    s = torch.randint(3, 300, (30,), generator=gen).tolist()
    # Every special part must move the logits, or the fixture would not show it.
    base = logits_of(model, s)
    assert np.abs(base - logits_of(twin, s)).max() > 1e-2, "query_pre_attn_scalar inert"
    assert np.abs(base).max() < 6.0 and np.abs(base).max() > 3.0, "soft-cap not in play"
    finish("tiny_gemma3", model, {}, [1, 7, 20, 45], 10, 24, args, gguf_model=twin)


def phi3(args):
    torch.manual_seed(8001)
    rot = 12  # head_dim 16 x 0.75
    gen = torch.Generator().manual_seed(8003)
    short = (1.0 + 0.5 * torch.rand(rot // 2, generator=gen)).tolist()
    long = (1.0 + 8.0 * torch.rand(rot // 2, generator=gen)).tolist()
    cfg = Phi3Config(**COMMON, intermediate_size=128, num_hidden_layers=2,
                     max_position_embeddings=128, original_max_position_embeddings=32,
                     rms_norm_eps=1e-5, tie_word_embeddings=False, pad_token_id=0,
                     rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                                      "partial_rotary_factor": 0.75, "short_factor": short,
                                      "long_factor": long,
                                      "original_max_position_embeddings": 32})
    model = Phi3ForCausalLM(cfg).eval()
    randomize(model, 8002)
    assert hasattr(model.model.layers[0].self_attn, "qkv_proj")
    finish("tiny_phi3", model, {}, [1, 7, 20, 32], 8, 20, args, long_lengths=[33, 50])


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-cpp", help="llama.cpp source tree (convert_hf_to_gguf.py)")
    ap.add_argument("--llama-server", help="llama-server binary (llama.cpp's greedy tokens)")
    ap.add_argument("families", nargs="*", default=["qwen3", "gemma3", "phi3"])
    a = ap.parse_args()
    torch.set_num_threads(2)
    for f in a.families:
        {"qwen3": qwen3, "gemma3": gemma3, "phi3": phi3}[f](a)
