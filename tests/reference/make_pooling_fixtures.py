#!/usr/bin/env python3
"""Makes tiny random pooling models in the sentence-transformers layout and what
sentence-transformers (the oracle) computes for them — the fixtures of
tests/unit/pooling/ and tests/integration/test_embeddings.py:

  tests/fixtures/tiny_qwen3_embed/       Qwen3 backbone (hidden 64, head_dim 32, 2 layers) saved
                                         as Qwen3-Embedding is: modules.json, 1_Pooling
                                         (lasttoken), 2_Dense (64 -> 48, bias, Tanh), 3_Normalize,
                                         config_sentence_transformers.json with a "query" prompt;
                                         tokenizer.json appends <|eot_id|> to every text (as
                                         Qwen3-Embedding's appends <|endoftext|>).
  tests/fixtures/tiny_qwen3_embed_mean/  the same backbone, mean pooling, no Dense, no Normalize.

With --llama-cpp SRC (llama.cpp's source, e.g. the llama-cpp-python sdist's vendor/llama.cpp)
each folder also gets model.gguf made by its convert_hf_to_gguf.py (--outtype f32; the tokenizer
swapped for a SentencePiece one in a temporary copy, since the converter does not know this
tokenizer's pre-tokenizer; the GGUF's tokenizer is not used by the tests, which feed token ids),
carrying {arch}.pooling_type from 1_Pooling. llama.cpp's converter does not carry Dense layers
for Qwen3, so the GGUF test compares against "hidden_embeddings": the pooled, normalised vector
before the Dense layer, computed from the same model with sentence-transformers' modules.

Each folder gets expected.json: {"texts", "ids" (tokenizer ids, special tokens included),
"embeddings" (model.encode(texts)), "query_ids", "query_embeddings" (prompt_name="query"),
"sentence_transformers", "transformers"}.

Run: PYTHONPATH=.venv-st <venv with torch + transformers>/bin/python \
        tests/reference/make_pooling_fixtures.py [--llama-cpp SRC]
(venv: torch transformers safetensors numpy sentencepiece, and sentence-transformers). Deterministic: seeded.
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import sentence_transformers
import torch
import transformers
from sentence_transformers import SentenceTransformer
from sentence_transformers.models import Dense, Normalize, Pooling, Transformer
from transformers import Qwen3Config, Qwen3Model

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
TOKENIZER = FIXTURES / "tokenizer" / "bytelevel"

TEXTS = [
    "hello world",
    "The quick brown fox jumps over the lazy dog.",
    "a",
    "Embeddings turn text into vectors; rerankers score pairs.",
    "numbers 12345 and symbols #!?",
    "Ünïcödé — ümlauts, 日本語 and emoji 🙂",
    "short",
    "one more line of text that is a little longer than the others, so that padding matters "
    "when it is batched with the short ones",
]
QUERY_PROMPT = "Instruct: Given a query, find passages\nQuery: "


def write_tokenizer(out):
    tok = json.loads((TOKENIZER / "tokenizer.json").read_text())
    eos = {"id": "<|eot_id|>", "ids": [1], "tokens": ["<|eot_id|>"]}
    tok["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "<|eot_id|>", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 1}},
                 {"SpecialToken": {"id": "<|eot_id|>", "type_id": 1}}],
        "special_tokens": {"<|eot_id|>": eos},
    }
    (out / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|eot_id|>",
        "pad_token": "<|eot_id|>", "add_bos_token": False, "add_eos_token": True,
        "padding_side": "right", "model_max_length": 512}))


def backbone(tmp):
    torch.manual_seed(7)
    cfg = Qwen3Config(vocab_size=465, hidden_size=64, intermediate_size=128,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                      num_hidden_layers=2, max_position_embeddings=512, rms_norm_eps=1e-6,
                      tie_word_embeddings=True, bos_token_id=0, eos_token_id=1,
                      attn_implementation="eager")
    model = Qwen3Model(cfg).float()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            else:
                p.normal_(0.0, 0.25)
    model.save_pretrained(tmp, safe_serialization=True)
    write_tokenizer(tmp)
    return tmp


def encode_all(st, prompt_name=None):
    tok = st.tokenizer
    prompt = st.prompts.get(prompt_name, "") if prompt_name else ""
    ids = [tok(prompt + t)["input_ids"] for t in TEXTS]
    emb = st.encode(TEXTS, prompt_name=prompt_name, batch_size=3, convert_to_numpy=True)
    return ids, emb.astype(np.float32).tolist()


def convert(folder, llama_cpp):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    from make_kquant_gguf import train_tokenizer
    with tempfile.TemporaryDirectory() as tmp:
        hf = pathlib.Path(tmp) / "hf"
        shutil.copytree(folder, hf, ignore=shutil.ignore_patterns("expected*", "*.gguf",
                                                                  "tokenizer*"))
        train_tokenizer(hf / "tokenizer.model")
        env = dict(os.environ)
        env["PYTHONPATH"] = str(pathlib.Path(llama_cpp) / "gguf-py") + os.pathsep + \
            env.get("PYTHONPATH", "")
        subprocess.run([sys.executable, str(pathlib.Path(llama_cpp) / "convert_hf_to_gguf.py"),
                        str(hf), "--outtype", "f32", "--outfile", str(folder / "model.gguf")],
                       check=True, env=env, stdout=subprocess.DEVNULL)


def hidden_embeddings(st, ids):
    """The Pooling module's output, L2-normalised: what a GGUF without the Dense layer gives."""
    out = []
    with torch.no_grad():
        for seq in ids:
            feats = {"input_ids": torch.tensor([seq]), "attention_mask": torch.ones(1, len(seq),
                                                                                    dtype=torch.long)}
            for module in list(st)[:2]:
                feats = module(feats)
            v = feats["sentence_embedding"][0]
            out.append((v / v.norm()).tolist())
    return out


def make(name, hf_dir, modules_fn, prompts, llama_cpp=None):
    out = FIXTURES / name
    shutil.rmtree(out, ignore_errors=True)
    tr = Transformer(str(hf_dir), max_seq_length=512)
    st = SentenceTransformer(modules=modules_fn(tr), prompts=prompts, device="cpu")
    st.save(str(out))
    st = SentenceTransformer(str(out), device="cpu")  # what a user loads from the folder
    ids, emb = encode_all(st)
    meta = {"texts": TEXTS, "ids": ids, "embeddings": emb,
            "sentence_transformers": sentence_transformers.__version__,
            "transformers": transformers.__version__}
    if prompts:
        q_ids, q_emb = encode_all(st, "query")
        meta.update({"query_prompt": QUERY_PROMPT, "query_ids": q_ids, "query_embeddings": q_emb})
    if llama_cpp:
        convert(out, llama_cpp)
        meta["hidden_embeddings"] = hidden_embeddings(st, ids)
    (out / "expected.json").write_text(json.dumps(meta, ensure_ascii=False))
    for junk in ("README.md",):
        (out / junk).unlink(missing_ok=True)
    print(name, "dims", len(emb[0]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-cpp", help="llama.cpp source folder (convert_hf_to_gguf.py)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        hf = backbone(pathlib.Path(tmp))

        def last_dense_norm(tr):
            torch.manual_seed(11)
            dense = Dense(64, 48, bias=True, activation_function=torch.nn.Tanh())
            with torch.no_grad():
                dense.linear.weight.normal_(0.0, 0.3)
                dense.linear.bias.normal_(0.0, 0.3)
            return [tr, Pooling(64, pooling_mode="lasttoken"), dense, Normalize()]

        def mean_only(tr):
            return [tr, Pooling(64, pooling_mode="mean")]

        make("tiny_qwen3_embed", hf, last_dense_norm, {"query": QUERY_PROMPT, "document": ""},
             args.llama_cpp)
        make("tiny_qwen3_embed_mean", hf, mean_only, {}, args.llama_cpp)


if __name__ == "__main__":
    main()
