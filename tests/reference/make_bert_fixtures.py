#!/usr/bin/env python3
"""Makes tiny random BERT embedding models in the sentence-transformers layout, the GGUF that
llama.cpp's converter (convert_hf_to_gguf.py, class BertModel) writes for them, and what the
oracles compute — the fixtures of tests/unit/pooling/bert_*_test.cpp and
tests/integration/test_embeddings_bert.py:

  tests/fixtures/tiny_bert/       BertModel (hidden 64, 4 heads, 2 layers, ffn 128, 128 positions,
                                  all-MiniLM-L6-v2's layout) with a WordPiece vocab of
                                  tests/reference/bert_vocab.txt (uncased: lowercase + accent
                                  stripping), 1_Pooling mean, 2_Normalize; model.gguf.
  tests/fixtures/tiny_bert_cls/   the same backbone, CLS pooling, no Normalize (bge's pooling is
                                  CLS); model.gguf with pooling_type CLS.

The GGUF is written with the gguf package (gguf-py, which the converter itself uses) as the
converter does it: tensor names from gguf.get_tensor_name_map(MODEL_ARCH.BERT), hyper-parameters
(bert.context_length, embedding_length, feed_forward_length, block_count, attention.head_count,
attention.layer_norm_epsilon, attention.causal = false, pooling_type, token_type_count), the
vocab in llama.cpp's "phantom space" form (control tokens as they are, "##x" -> "x", any other
token "\u2581" + token), tokenizer.ggml.model "bert", and the special ids by gguf.SpecialVocab.
f32 throughout (--outtype f32).

expected.json: {"texts", "ids" (HF tokenizers' ids of each text, [CLS] / [SEP] included),
"embeddings" (SentenceTransformer.encode), versions}.

Run: .venv-test/bin/python tests/reference/make_bert_fixtures.py
(torch, transformers, tokenizers, sentence-transformers, gguf). Deterministic: seeded.
"""
import json
import pathlib
import shutil
import tempfile

import gguf
import numpy as np
import sentence_transformers
import tokenizers
import torch
import transformers
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
from transformers import BertConfig, BertModel, BertTokenizerFast

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
VOCAB = pathlib.Path(__file__).resolve().parent / "bert_vocab.txt"

TEXTS = [
    "hello world",
    "The quick brown fox jumps over the lazy dog.",
    "a",
    "Embeddings turn text into vectors; rerankers score pairs!",
    "Café, naïve résumé — ÉCOLE: déjà vu?",
    "日本語 and 中文 text, mixed with English.",
    "unknownwordzzqx and xylophone's (parenthesised) [brackets]",
    "numbers 12345, 3.14 and symbols #!?$%&*+<=>@^_`{|}~",
    "a [MASK] token, a [SEP] and [CLS] in the text",
    "tabs\tand\nnewlines\r\n   and   spaces",
    "Straße ΑΘΗΝΑ Ωμέγα İstanbul",
    "x" * 120,
    "the the the the the the the the the the the the the the the the the the the the the "
    "end of a longer line that is batched with short ones, so padding matters",
]


def backbone(tmp):
    words = VOCAB.read_text(encoding="utf-8").splitlines()
    tok = BertTokenizerFast(vocab={t: i for i, t in enumerate(words)}, do_lower_case=True,
                            model_max_length=128)
    tok.save_pretrained(tmp)
    torch.manual_seed(5)
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=64, num_hidden_layers=2,
                     num_attention_heads=4, intermediate_size=128, max_position_embeddings=128,
                     type_vocab_size=2, layer_norm_eps=1e-12, hidden_act="gelu",
                     attn_implementation="eager")
    model = BertModel(cfg, add_pooling_layer=True).float()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm.weight" in name:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            else:
                p.normal_(0.0, 0.2)
    model.save_pretrained(tmp, safe_serialization=True)
    return tmp


def phantom(tok, toktype):
    if toktype == gguf.TokenType.CONTROL:
        return tok
    if tok.startswith("##"):
        return tok[2:]
    return "\u2581" + tok


def write_gguf(folder, st, pooling):
    """model.gguf as convert_hf_to_gguf.py's BertModel writes it (f32)."""
    model = st[0].auto_model
    cfg = model.config
    hf_tok = st.tokenizer
    vocab = hf_tok.get_vocab()
    reverse = {i: t for t, i in vocab.items()}
    added = hf_tok.added_tokens_decoder
    tokens, types = [], []
    for i in range(cfg.vocab_size):  # as TextModel.get_vocab_base
        t = reverse[i]
        tt = gguf.TokenType.NORMAL
        if i in added:
            tt = gguf.TokenType.CONTROL if added[i].special else gguf.TokenType.USER_DEFINED
        tokens.append(t)
        types.append(tt)
    w = gguf.GGUFWriter(str(folder / "model.gguf"), "bert")
    w.add_name("tiny_bert")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_head_count(cfg.num_attention_heads)
    w.add_layer_norm_eps(cfg.layer_norm_eps)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_causal_attention(False)
    w.add_pooling_type(pooling)
    w.add_token_type_count(cfg.type_vocab_size)
    w.add_tokenizer_model("bert")
    w.add_tokenizer_pre("default")
    w.add_token_list(list(map(phantom, tokens, types)))
    w.add_token_types(types)
    gguf.SpecialVocab(str(folder), n_vocab=len(tokens)).add_to_gguf(w)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, cfg.num_hidden_layers)
    for name, t in model.state_dict().items():
        if name in ("embeddings.position_ids",) or name.startswith("pooler."):
            continue
        new = names.get_name(name, try_suffixes=(".weight", ".bias"))
        assert new is not None, name
        w.add_tensor(new, t.detach().float().numpy().astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def make(name, hf_dir, modules_fn, pooling):
    out = FIXTURES / name
    shutil.rmtree(out, ignore_errors=True)
    tr = Transformer(str(hf_dir), max_seq_length=128)
    st = SentenceTransformer(modules=modules_fn(tr), device="cpu")
    st.save(str(out))
    st = SentenceTransformer(str(out), device="cpu")  # what a user loads from the folder
    fast = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    ids = [fast.encode(t).ids for t in TEXTS]
    emb = st.encode(TEXTS, batch_size=4, convert_to_numpy=True).astype(np.float32).tolist()
    write_gguf(out, st, pooling)
    meta = {"texts": TEXTS, "ids": ids, "embeddings": emb,
            "sentence_transformers": sentence_transformers.__version__,
            "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
            "gguf": gguf.__version__ if hasattr(gguf, "__version__") else "0.19.0"}
    (out / "expected.json").write_text(json.dumps(meta, ensure_ascii=False))
    (out / "README.md").unlink(missing_ok=True)
    print(name, "dims", len(emb[0]), "max ids", max(len(i) for i in ids))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        hf = backbone(pathlib.Path(tmp))
        make("tiny_bert", hf, lambda tr: [tr, Pooling(64, pooling_mode="mean"), Normalize()],
             gguf.PoolingType.MEAN)
        make("tiny_bert_cls", hf, lambda tr: [tr, Pooling(64, pooling_mode="cls")],
             gguf.PoolingType.CLS)


if __name__ == "__main__":
    main()
