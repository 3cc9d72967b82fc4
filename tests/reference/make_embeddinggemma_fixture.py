#!/usr/bin/env python3
"""Makes tests/fixtures/tiny_embeddinggemma: a tiny random EmbeddingGemma (Gemma3TextModel with
use_bidirectional_attention) saved by sentence-transformers in google/embeddinggemma-300m's
layout, and what sentence-transformers (the oracle) computes for it:

  Gemma3TextModel (hidden 64, 4 heads / 2 kv heads, head_dim 16, 6 layers: 5 sliding, 1 full,
  sliding_window 8, i.e. |query - key| <= 4 in bidirectional mode), 1_Pooling (mean),
  2_Dense (64 -> 128, no bias, Identity), 3_Dense (128 -> 64, no bias, Identity), 4_Normalize,
  config_sentence_transformers.json with EmbeddingGemma's prompts ("query", "document", ...);
  tokenizer.json adds <|begin_of_text|> before and <|eot_id|> after every text (as
  EmbeddingGemma's adds <bos> and <eos>).

With --llama-cpp SRC the folder also gets model.gguf made by llama.cpp's convert_hf_to_gguf.py
(class EmbeddingGemma, arch gemma-embedding; --outtype f32 --sentence-transformers-dense-modules
so dense_2 / dense_3 are carried; the tokenizer swapped for a SentencePiece one in a temporary
copy since the converter does not know this tokenizer's pre-tokenizer; the tests feed the HF
tokenizer's ids to both).

expected.json: {"texts", "ids" (tokenizer ids, special tokens included), "embeddings"
(model.encode(texts)), "query_ids" / "query_embeddings" (prompt_name="query"), "document_ids" /
"document_embeddings" (prompt_name="document"), "prompts", "causal_embeddings" (the same model
with use_bidirectional_attention off: what a causal mask would give, for the tests to tell the
two apart), "sentence_transformers", "transformers"}.

Run: .venv-test/bin/python tests/reference/make_embeddinggemma_fixture.py --llama-cpp SRC
(venv: torch transformers safetensors numpy sentencepiece sentence-transformers). Seeded.
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
from transformers import Gemma3TextConfig, Gemma3TextModel

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
TOKENIZER = FIXTURES / "tokenizer" / "bytelevel"
OUT = FIXTURES / "tiny_embeddinggemma"

TEXTS = [
    "hello world",
    "The quick brown fox jumps over the lazy dog.",
    "a",
    "Embeddings turn text into vectors; rerankers score pairs.",
    "numbers 12345 and symbols #!?",
    "Ünïcödé — ümlauts, 日本語 and emoji 🙂",
    "one more line of text that is a little longer than the others, so that padding and the "
    "sliding window both matter when it is batched with the short ones",
]
# google/embeddinggemma-300m's config_sentence_transformers.json prompts (a subset).
PROMPTS = {
    "query": "task: search result | query: ",
    "document": "title: none | text: ",
    "Classification": "task: classification | query: ",
    "Clustering": "task: clustering | query: ",
    "STS": "task: sentence similarity | query: ",
}


def write_tokenizer(out):
    tok = json.loads((TOKENIZER / "tokenizer.json").read_text())
    bos = {"id": "<|begin_of_text|>", "ids": [0], "tokens": ["<|begin_of_text|>"]}
    eos = {"id": "<|eot_id|>", "ids": [1], "tokens": ["<|eot_id|>"]}
    tok["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "<|eot_id|>", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                 {"Sequence": {"id": "A", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 1}},
                 {"SpecialToken": {"id": "<|eot_id|>", "type_id": 1}}],
        "special_tokens": {"<|begin_of_text|>": bos, "<|eot_id|>": eos},
    }
    (out / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|begin_of_text|>",
        "eos_token": "<|eot_id|>", "pad_token": "<|eot_id|>", "add_bos_token": True,
        "add_eos_token": True, "padding_side": "right", "model_max_length": 512}))


def config(bidirectional):
    return Gemma3TextConfig(
        vocab_size=465, hidden_size=64, intermediate_size=128, num_hidden_layers=6,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=16,
        sliding_window=8, max_position_embeddings=512, rms_norm_eps=1e-6,
        use_bidirectional_attention=bidirectional, bos_token_id=0, eos_token_id=1,
        pad_token_id=1, attn_implementation="eager")


def backbone(tmp):
    torch.manual_seed(5)
    model = Gemma3TextModel(config(True)).float()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(0.2 * torch.randn_like(p))  # Gemma's norms scale by 1 + w
            else:
                p.normal_(0.0, 0.2)
    model.save_pretrained(tmp, safe_serialization=True)
    write_tokenizer(tmp)
    return tmp


def dense(i, o, seed):
    torch.manual_seed(seed)
    d = Dense(i, o, bias=False, activation_function=torch.nn.Identity())
    with torch.no_grad():
        d.linear.weight.normal_(0.0, 1.0 / np.sqrt(i))
    return d


def encode_all(st, prompt_name=None):
    tok = st.tokenizer
    prompt = st.prompts.get(prompt_name, "") if prompt_name else ""
    ids = [tok(prompt + t)["input_ids"] for t in TEXTS]
    emb = st.encode(TEXTS, prompt_name=prompt_name, batch_size=4, convert_to_numpy=True)
    # Padding must not change a text's vector: each alone gives the same (within float noise).
    alone = np.stack([st.encode([t], prompt_name=prompt_name, convert_to_numpy=True)[0]
                      for t in TEXTS])
    assert np.abs(alone - emb).max() < 1e-5, np.abs(alone - emb).max()
    return ids, emb.astype(np.float32).tolist()


def causal_embeddings(st, ids):
    """The same weights with a causal mask: what the tests must not match."""
    st.transformers_model.config.use_bidirectional_attention = False
    st.transformers_model.config.sliding_window = 8
    for layer in st.transformers_model.layers:
        layer.self_attn.is_causal = True
        if layer.self_attn.sliding_window is not None:
            layer.self_attn.sliding_window = 8
    out = []
    with torch.no_grad():
        for seq in ids:
            feats = {"input_ids": torch.tensor([seq]),
                     "attention_mask": torch.ones(1, len(seq), dtype=torch.long)}
            for module in st:
                feats = module(feats)
            out.append(feats["sentence_embedding"][0].tolist())
    return out


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
                        str(hf), "--outtype", "f32", "--sentence-transformers-dense-modules",
                        "--outfile", str(folder / "model.gguf")],
                       check=True, env=env, stdout=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-cpp", help="llama.cpp source folder (convert_hf_to_gguf.py)")
    args = ap.parse_args()
    shutil.rmtree(OUT, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        hf = backbone(pathlib.Path(tmp))
        tr = Transformer(str(hf), max_seq_length=512)
        modules = [tr, Pooling(64, pooling_mode="mean"), dense(64, 128, 21), dense(128, 64, 22),
                   Normalize()]
        st = SentenceTransformer(modules=modules, prompts=PROMPTS, device="cpu")
        st.save(str(OUT))
    st = SentenceTransformer(str(OUT), device="cpu")  # what a user loads from the folder
    assert st.transformers_model.config.use_bidirectional_attention
    ids, emb = encode_all(st)
    q_ids, q_emb = encode_all(st, "query")
    d_ids, d_emb = encode_all(st, "document")
    meta = {"texts": TEXTS, "ids": ids, "embeddings": emb, "prompts": PROMPTS,
            "query_ids": q_ids, "query_embeddings": q_emb,
            "document_ids": d_ids, "document_embeddings": d_emb,
            "sentence_transformers": sentence_transformers.__version__,
            "transformers": transformers.__version__}
    meta["causal_embeddings"] = causal_embeddings(st, ids)
    worst = min(float(np.dot(a, b)) for a, b in zip(emb, meta["causal_embeddings"]))
    print("causal vs bidirectional: lowest cosine", worst)
    if args.llama_cpp:
        convert(OUT, args.llama_cpp)
    (OUT / "expected.json").write_text(json.dumps(meta, ensure_ascii=False))
    (OUT / "README.md").unlink(missing_ok=True)
    print("tiny_embeddinggemma dims", len(emb[0]), "ids", [len(i) for i in ids])


if __name__ == "__main__":
    main()
