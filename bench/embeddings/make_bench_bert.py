#!/usr/bin/env python3
"""A random BERT GGUF of bge-small-en-v1.5's shape (hidden 384, 12 layers, 12 heads, ffn 1536,
512 positions, a 30522-token WordPiece vocab, CLS pooling), the BERT-shaped model of issue 55's
embeddings benchmark against llama.cpp's server (e.g. bench/embeddings/embed_vs_llamacpp.py
--pooling cls),
written with the gguf package as llama.cpp's convert_hf_to_gguf.py writes a BERT (tensor names,
bert.* keys, phantom-space vocab; f16 matrices, f32 vectors and f32 position and token-type
tables, as --outtype f16). Only the
shapes matter for speed: the weights are random, the vocab is tests/reference/bert_vocab.txt
padded with made-up words and their "##" pieces.

Run: .venv-test/bin/python bench/embeddings/make_bench_bert.py [OUT_DIR]   (numpy, gguf)
     -> OUT_DIR/bench_bert.gguf (OUT_DIR default /tmp/bench-bert; 67 MB)"""
import pathlib
import sys

import gguf
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
H, L, NH, F, P, V = 384, 12, 12, 1536, 512, 30522


def vocab():
    words = (ROOT / "tests" / "reference" / "bert_vocab.txt").read_text(encoding="utf-8").splitlines()
    i = 0
    while len(words) < V:
        words.append(f"w{i}" if i % 2 == 0 else f"##w{i}")
        i += 1
    return words


def phantom(tok, control):
    if control:
        return tok
    return tok[2:] if tok.startswith("##") else "\u2581" + tok


def main():
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/bench-bert")
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(3)
    toks = vocab()
    special = {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102, "[MASK]": 103}
    types = [gguf.TokenType.CONTROL if t in special else gguf.TokenType.NORMAL for t in toks]
    w = gguf.GGUFWriter(str(out / "bench_bert.gguf"), "bert")
    w.add_name("bench_bert_bge_small_shape")
    w.add_context_length(P)
    w.add_embedding_length(H)
    w.add_feed_forward_length(F)
    w.add_block_count(L)
    w.add_head_count(NH)
    w.add_layer_norm_eps(1e-12)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType.CLS)
    w.add_token_type_count(2)
    w.add_tokenizer_model("bert")
    w.add_tokenizer_pre("default")
    w.add_token_list([phantom(t, tt == gguf.TokenType.CONTROL) for t, tt in zip(toks, types)])
    w.add_token_types(types)
    w.add_unk_token_id(100)
    w.add_sep_token_id(102)
    w.add_pad_token_id(0)
    w.add_mask_token_id(103)
    w.add_bos_token_id(101)  # what gguf.SpecialVocab writes for BERT's [CLS] ... [SEP] template
    w.add_eos_token_id(102)
    w.add_add_bos_token(True)
    w.add_add_eos_token(True)

    def mat(name, rows, cols, dtype=np.float16):
        w.add_tensor(name, (rng.standard_normal((rows, cols)) * 0.05).astype(dtype))

    def vec(name, n, one=False):
        v = rng.standard_normal(n) * 0.05 + (1.0 if one else 0.0)
        w.add_tensor(name, v.astype(np.float32))

    mat("token_embd.weight", V, H)
    # llama.cpp's converter keeps these two in f32 whatever --outtype (conversion/base.py: "Some
    # tensor types are always in float32"); its BERT graph adds the type row as it is.
    mat("position_embd.weight", P, H, np.float32)
    mat("token_types.weight", 2, H, np.float32)
    vec("token_embd_norm.weight", H, True)
    vec("token_embd_norm.bias", H)
    for b in range(L):
        for n in ("attn_q", "attn_k", "attn_v", "attn_output"):
            mat(f"blk.{b}.{n}.weight", H, H)
            vec(f"blk.{b}.{n}.bias", H)
        for n in ("attn_output_norm", "layer_output_norm"):
            vec(f"blk.{b}.{n}.weight", H, True)
            vec(f"blk.{b}.{n}.bias", H)
        mat(f"blk.{b}.ffn_up.weight", F, H)
        vec(f"blk.{b}.ffn_up.bias", F)
        mat(f"blk.{b}.ffn_down.weight", H, F)
        vec(f"blk.{b}.ffn_down.bias", H)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(out / "bench_bert.gguf")


if __name__ == "__main__":
    main()
