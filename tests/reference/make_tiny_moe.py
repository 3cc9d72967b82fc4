#!/usr/bin/env python3
"""Makes tiny random mixture-of-experts models with HF transformers, their GGUF conversions by
llama.cpp's own convert_hf_to_gguf.py, and the oracles of tests/unit/graph/tiny_moe_test.cpp:

  tests/fixtures/tiny_mixtral/          MixtralForCausalLM, 4 experts top-2
  tests/fixtures/tiny_mixtral_sw/       the same with sliding_window 9; HF only, as llama.cpp's
                                        converter does not carry Mixtral's window into the GGUF
  tests/fixtures/tiny_qwen3_moe/        Qwen3MoeForCausalLM, 8 experts top-3, norm_topk_prob true,
                                        q/k RMSNorm per head
  tests/fixtures/tiny_qwen3_moe_mixed/  Qwen3MoeForCausalLM with norm_topk_prob false and
                                        mlp_only_layers [0] (layer 0 a dense MLP); HF only, as
                                        llama.cpp's qwen3moe has neither
  tests/fixtures/tiny_qwen3_moe_q4_k_m/ Qwen3-MoE with hidden and expert ffn 256, one layer,
                                        quantized to Q4_K_M by llama-quantize (--quantize); its
                                        oracle is transformers on the GGUF's dequantized weights

Weights are rounded to bf16 and stored as bf16 (safetensors and, --outtype bf16, the GGUF), so
the f32 forward transformers computes on them is the exact oracle of both files. Each folder:
config.json, model.safetensors, model.gguf (not for _sw and _mixed), expected.json ({"vocab_size",
"sequences", "greedy_prompt", "greedy_tokens", "greedy_min_margin", "greedy_margins", "transformers", "parameters", "active_parameters",
"llamacpp_greedy_tokens" when a llama-server was given}) and expected_logits.f32 (every position
of every sequence, [sum(len), vocab] f32 LE).

The converter needs a tokenizer: a 300-piece SentencePiece model trained on seeded pseudo-words
(never used by the tests). llama.cpp's Qwen3MoeModel only reads a BPE tokenizer.json whose
pre-tokenizer it recognises, so for qwen3moe the script has the converter read the SentencePiece
model instead (its Qwen2/Qwen3 classes do that themselves); tensors and metadata are converted
by llama.cpp's code unchanged.

Run: /work/refvenv/bin/python tests/reference/make_tiny_moe.py \
        --llama-cpp .deps/llama.cpp-0.3.36/src [--llama-server .deps/llama.cpp-0.3.36/build/bin/llama-server] \
        [--quantize .deps/llama.cpp-0.3.36/build/bin/llama-quantize] [--only-kquant]
(venv: torch transformers safetensors numpy gguf sentencepiece). With --llama-server, llama.cpp's
greedy continuation of greedy_prompt on each model.gguf (temperature 0, one slot) is stored as
llamacpp_greedy_tokens; greedy_margins holds transformers' top-1 minus top-2 logit at each step
(llama.cpp's CPU BF16 matmul rounds activations to bf16, so it may take the other side of a
near-tie: the test compares llama.cpp's tokens up to the first step of margin < 0.02).
"""
import argparse
import copy
import io
import json
import os
import pathlib
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np
import sentencepiece as spm
import torch
import transformers
from transformers import (MixtralConfig, MixtralForCausalLM, Qwen3MoeConfig,
                          Qwen3MoeForCausalLM)

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
# head_dim 64: the CUDA backend's attention kernels take 64 or 128 (tests/unit/cuda/moe_test.cpp
# runs these models too).
COMMON = dict(vocab_size=300, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
              num_key_value_heads=1, head_dim=64, bos_token_id=1, eos_token_id=2,
              max_position_embeddings=512, tie_word_embeddings=False)


def randomize(model, seed):
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif name.endswith("gate.weight"):
                p.copy_(0.5 * torch.randn_like(p))  # routers far from uniform
            else:
                p.copy_(0.15 * torch.randn_like(p))
            p.copy_(p.to(torch.bfloat16).float())  # what the bf16 files hold


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
    return seq[len(prompt):], margins


def parameter_counts(model):
    """transformers' total, and the parameters one token reads: the total less, in each sparse
    layer, the experts the router leaves out (counted from the experts module)."""
    total = model.num_parameters()
    idle = 0
    for layer in model.model.layers:
        experts = getattr(layer.mlp, "experts", None)
        if experts is None:
            continue
        n = sum(p.numel() for p in experts.parameters())
        idle += n // experts.num_experts * (experts.num_experts - model.config.num_experts_per_tok)
    return {"parameters": total, "active_parameters": total - idle}


def train_tokenizer(path):
    rng = random.Random(7)
    letters = "etaoinshrdlucmfwypvbgkjqxz"
    words = ["".join(rng.choice(letters[:rng.randint(6, 26)]) for _ in range(rng.randint(1, 8)))
             for _ in range(4000)]
    lines = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(3000)]
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=buf,
                                   vocab_size=280, model_type="unigram", num_threads=1,
                                   hard_vocab_limit=False, bos_id=1, eos_id=2, unk_id=0,
                                   pad_id=-1, seed_sentencepiece_size=100000)
    path.write_bytes(buf.getvalue())


CONVERT_WRAPPER = """
import sys
sys.path.insert(0, {src!r})
sys.argv = [{script!r}] + {args!r}
import runpy
# llama.cpp's Qwen3MoeModel reads only a recognised BPE tokenizer.json; its Qwen2/Qwen3 classes
# fall back to SentencePiece, which this tiny model has.
import conversion.qwen as q
q.Qwen3MoeModel.set_vocab = lambda self: self._set_vocab_sentencepiece()
runpy.run_path({script!r}, run_name="__main__")
"""


def convert(llama_cpp, hf_dir, out):
    src = str(pathlib.Path(llama_cpp).resolve())
    script = str(pathlib.Path(src) / "convert_hf_to_gguf.py")
    code = CONVERT_WRAPPER.format(src=src, script=script,
                                  args=[str(hf_dir), "--outtype", "bf16", "--outfile", str(out)])
    env = {k: v for k, v in os.environ.items() if k != "NO_LOCAL_GGUF"}
    env["PYTHONPATH"] = str(pathlib.Path(src) / "gguf-py")
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=src)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def llamacpp_greedy(server, gguf_path, prompt, steps):
    port = free_port()
    proc = subprocess.Popen([server, "-m", str(gguf_path), "--port", str(port), "-c", "512",
                             "-np", "1", "-t", "2", "--no-warmup"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                if urllib.request.urlopen(url + "/health", timeout=1).status == 200:
                    break
            except Exception:
                time.sleep(0.2)
        body = json.dumps({"prompt": prompt, "n_predict": steps, "temperature": 0.0,
                           "top_k": 1, "samplers": ["top_k"], "cache_prompt": False,
                           "return_tokens": True, "ignore_eos": True}).encode()
        req = urllib.request.Request(url + "/completion", body,
                                     {"Content-Type": "application/json"})
        return json.loads(urllib.request.urlopen(req, timeout=120).read())["tokens"]
    finally:
        proc.terminate()
        proc.wait()


def write(name, model, lengths, greedy_prompt_len, greedy_steps, args, gguf=True):
    out = FIXTURES / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    # A bf16 copy is saved: model.to(bfloat16) would also round the RoPE inv_freq buffer, which
    # model.float() does not restore, and the oracle would drift from the checkpoint's.
    copy.deepcopy(model).to(torch.bfloat16).save_pretrained(out, safe_serialization=True)
    (out / "generation_config.json").unlink(missing_ok=True)
    gen = torch.Generator().manual_seed(99)
    V = model.config.vocab_size
    seqs = [torch.randint(3, V, (n,), generator=gen).tolist() for n in lengths]
    np.concatenate([logits_of(model, s) for s in seqs]).astype("<f4").tofile(
        out / "expected_logits.f32")
    prompt = torch.randint(3, V, (greedy_prompt_len,), generator=gen).tolist()
    tokens, margins = greedy(model, prompt, greedy_steps)
    margin = min(margins)
    expected = {"vocab_size": V, "sequences": seqs, "greedy_prompt": prompt,
                "greedy_tokens": tokens, "greedy_min_margin": margin,
                "greedy_margins": [round(m, 6) for m in margins],
                "transformers": transformers.__version__, **parameter_counts(model)}
    if gguf:
        with tempfile.TemporaryDirectory() as tmp:
            hf = pathlib.Path(tmp) / "hf"
            shutil.copytree(out, hf)
            train_tokenizer(hf / "tokenizer.model")
            convert(args.llama_cpp, hf, out / "model.gguf")
        if args.llama_server:
            expected["llamacpp_greedy_tokens"] = llamacpp_greedy(
                args.llama_server, out / "model.gguf", prompt, greedy_steps)
            same = expected["llamacpp_greedy_tokens"] == tokens
            print(f"  llama.cpp greedy {'equals' if same else 'DIFFERS from'} transformers")
    (out / "expected.json").write_text(json.dumps(expected) + "\n")
    print(f"wrote {out} (greedy min margin {margin:.3g})")


def mixtral(args):
    torch.manual_seed(6001)
    cfg = MixtralConfig(**COMMON, intermediate_size=64, num_local_experts=4,
                        num_experts_per_tok=2, rms_norm_eps=1e-5, rope_theta=10000.0,
                        sliding_window=None, attn_implementation="eager")
    model = MixtralForCausalLM(cfg).eval()
    randomize(model, 6002)
    write("tiny_mixtral", model, [1, 8, 30], 10, 24, args)


def mixtral_sw(args):
    window = 9
    torch.manual_seed(6101)
    cfg = MixtralConfig(**COMMON, intermediate_size=64, num_local_experts=4,
                        num_experts_per_tok=2, rms_norm_eps=1e-5, rope_theta=10000.0,
                        sliding_window=window, attn_implementation="eager")
    model = MixtralForCausalLM(cfg).eval()
    randomize(model, 6102)
    # The window must change the logits past it, or the fixture would prove nothing.
    full = MixtralForCausalLM(MixtralConfig(**{**cfg.to_dict(), "sliding_window": None})).eval()
    full.load_state_dict(model.state_dict())
    seq = list(range(3, 33))
    d = np.abs(logits_of(full, seq)[window:] - logits_of(model, seq)[window:]).max()
    assert d > 1e-2, f"transformers ignored sliding_window (max diff {d})"
    write("tiny_mixtral_sw", model, [5, 30], 10, 24, args, gguf=False)


def qwen3_moe(args):
    torch.manual_seed(7001)
    cfg = Qwen3MoeConfig(**COMMON, intermediate_size=96, moe_intermediate_size=32, num_experts=8,
                         num_experts_per_tok=3, norm_topk_prob=True, rms_norm_eps=1e-6,
                         rope_theta=1000000.0, attn_implementation="eager")
    model = Qwen3MoeForCausalLM(cfg).eval()
    randomize(model, 7002)
    assert model.model.layers[0].self_attn.q_norm is not None
    write("tiny_qwen3_moe", model, [1, 8, 30], 10, 24, args)


def qwen3_moe_mixed(args):
    torch.manual_seed(8001)
    cfg = Qwen3MoeConfig(**COMMON, intermediate_size=96, moe_intermediate_size=32, num_experts=8,
                         num_experts_per_tok=3, norm_topk_prob=False, mlp_only_layers=[0],
                         rms_norm_eps=1e-6, rope_theta=1000000.0, attn_implementation="eager")
    model = Qwen3MoeForCausalLM(cfg).eval()
    randomize(model, 8002)
    assert not hasattr(model.model.layers[0].mlp, "experts"), "layer 0 should be dense"
    assert hasattr(model.model.layers[1].mlp, "experts")
    write("tiny_qwen3_moe_mixed", model, [1, 8, 30], 10, 24, args, gguf=False)


def hf_state_from_gguf(path):
    """HF (transformers 5) state dict of a qwen3moe GGUF, every tensor dequantized to f32 by the
    gguf package; the 3-D experts become the fused gate_up_proj / down_proj."""
    import gguf
    reader = gguf.GGUFReader(str(path))
    names = {"token_embd.weight": "model.embed_tokens.weight", "output.weight": "lm_head.weight",
             "output_norm.weight": "model.norm.weight"}
    per_layer = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
                 "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
                 "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm",
                 "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
                 "ffn_gate_inp": "mlp.gate"}
    sd, types, exps = {}, {}, {}
    for t in reader.tensors:
        arr = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        arr = arr.reshape(list(reversed([int(x) for x in t.shape])))
        types[t.name] = t.tensor_type.name
        if t.name in names:
            sd[names[t.name]] = torch.from_numpy(arr.copy())
            continue
        _, layer, kind, _ = t.name.split(".")
        if kind.endswith("_exps"):
            exps[(layer, kind)] = arr
        else:
            sd[f"model.layers.{layer}.{per_layer[kind]}.weight"] = torch.from_numpy(arr.copy())
    for (layer, kind), arr in exps.items():
        if kind == "ffn_gate_exps":
            up = exps[(layer, "ffn_up_exps")]
            sd[f"model.layers.{layer}.mlp.experts.gate_up_proj"] = torch.from_numpy(
                np.concatenate([arr, up], axis=1).copy())
        elif kind == "ffn_down_exps":
            sd[f"model.layers.{layer}.mlp.experts.down_proj"] = torch.from_numpy(arr.copy())
    return sd, types


def qwen3_moe_kquant(args):
    """tests/fixtures/tiny_qwen3_moe_q4_k_m/: hidden and expert ffn 256 (K-quant super-blocks),
    converted to f32 GGUF and quantized to Q4_K_M by llama.cpp's tools; the oracle is transformers
    in f32 on that GGUF's weights dequantized by the gguf package (the K-quant experts end to end:
    slices of 3-D Q4_K / Q6_K tensors packed like matrices)."""
    torch.manual_seed(9001)
    cfg = Qwen3MoeConfig(vocab_size=300, hidden_size=256, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                         intermediate_size=256, moe_intermediate_size=256, num_experts=4,
                         num_experts_per_tok=2, norm_topk_prob=True, rms_norm_eps=1e-6,
                         rope_theta=1000000.0, bos_token_id=1, eos_token_id=2,
                         max_position_embeddings=512, tie_word_embeddings=False,
                         attn_implementation="eager")
    model = Qwen3MoeForCausalLM(cfg).eval()
    torch.manual_seed(9002)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif name.endswith("gate.weight"):
                p.copy_(0.3 * torch.randn_like(p))
            else:
                p.copy_(0.08 * torch.randn_like(p))  # fan-in 256: activations stay O(1)
    out = FIXTURES / "tiny_qwen3_moe_q4_k_m"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        hf = pathlib.Path(tmp) / "hf"
        model.save_pretrained(hf, safe_serialization=True)
        train_tokenizer(hf / "tokenizer.model")
        f32 = pathlib.Path(tmp) / "f32.gguf"
        src = str(pathlib.Path(args.llama_cpp).resolve())
        script = str(pathlib.Path(src) / "convert_hf_to_gguf.py")
        code = CONVERT_WRAPPER.format(src=src, script=script,
                                      args=[str(hf), "--outtype", "f32", "--outfile", str(f32)])
        env = {k: v for k, v in os.environ.items() if k != "NO_LOCAL_GGUF"}
        env["PYTHONPATH"] = str(pathlib.Path(src) / "gguf-py")
        subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=src)
        subprocess.run([args.quantize, str(f32), str(out / "model.gguf"), "Q4_K_M", "1"],
                       check=True, stdout=subprocess.DEVNULL)
    sd, types = hf_state_from_gguf(out / "model.gguf")
    deq = Qwen3MoeForCausalLM(cfg).eval()
    missing, unexpected = deq.load_state_dict(sd, strict=False)
    assert not unexpected and all("rotary" in k for k in missing), (missing, unexpected)
    gen = torch.Generator().manual_seed(99)
    seqs = [torch.randint(3, 300, (n,), generator=gen).tolist() for n in (1, 9, 33)]
    np.concatenate([logits_of(deq, q) for q in seqs]).astype("<f4").tofile(
        out / "expected_logits.f32")
    prompt = torch.randint(3, 300, (8,), generator=gen).tolist()
    tokens, margins = greedy(deq, prompt, 16)
    (out / "expected.json").write_text(json.dumps({
        "vocab_size": 300, "sequences": seqs, "greedy_prompt": prompt, "greedy_tokens": tokens,
        "greedy_margins": [round(m, 6) for m in margins], "tensor_types": types,
        "transformers": transformers.__version__}) + "\n")
    print(f"wrote {out}: {sorted(set(types.values()))}, greedy min margin {min(margins):.3g}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-cpp", required=True, help="llama.cpp source tree")
    ap.add_argument("--llama-server", help="llama-server binary (llama.cpp's greedy tokens)")
    ap.add_argument("--quantize", help="llama-quantize binary (the Q4_K_M fixture)")
    ap.add_argument("--only-kquant", action="store_true", help="make the Q4_K_M fixture only")
    args = ap.parse_args()
    torch.set_num_threads(2)
    if args.quantize:
        qwen3_moe_kquant(args)
    if args.only_kquant:
        sys.exit(0)
    mixtral(args)
    mixtral_sw(args)
    qwen3_moe(args)
    qwen3_moe_mixed(args)
