#!/usr/bin/env python3
"""Exports the default model's tokenizer (SmolLM2, GGUF) as an HF tokenizer directory:
tokenizer.json + tokenizer_config.json (bos / eos / pad / unk tokens and the chat template), so
that the random-weight HF models of scripts/gpu-check.sh get SmolLM2's vocabulary and template.

Run: python tests/reference/export_gguf_tokenizer.py --gguf models/SmolLM2-135M-Instruct.Q4_1.gguf
         --out DIR
Needs the PyPI packages `gguf` and `tokenizers` (scripts/gpu-check.sh bundle installs them in a
git-ignored venv). The BPE model is the GGUF vocab + merges with SmolLM2's pre-tokenizer
(Digits(individual_digits) then ByteLevel, as tests/reference/make_tokenizer_fixtures.py builds
it); before writing, the export is checked against tests/fixtures/tokenizer/smollm2_ids.json.
"""
import argparse
import json
import os
import sys

from gguf import GGUFReader
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "tokenizer")
CONTROL = 3  # llama.cpp token type of special (control) tokens


def field(reader, key, default=None):
    f = reader.fields.get(key)
    return default if f is None else f.contents()


def build(reader):
    if field(reader, "tokenizer.ggml.model") != "gpt2":
        raise SystemExit("export_gguf_tokenizer: only byte-level BPE (gpt2) GGUF tokenizers")
    tokens = field(reader, "tokenizer.ggml.tokens")
    types = field(reader, "tokenizer.ggml.token_type")
    merges = [tuple(m.split(" ", 1)) for m in field(reader, "tokenizer.ggml.merges")]
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t, ty in zip(tokens, types) if ty == CONTROL])

    def name(key):
        i = field(reader, key)
        return None if i is None else tokens[int(i)]

    config = {
        "tokenizer_class": "GPT2Tokenizer",
        "model_max_length": 8192,
        "add_bos_token": bool(field(reader, "tokenizer.ggml.add_bos_token", False)),
        "add_eos_token": bool(field(reader, "tokenizer.ggml.add_eos_token", False)),
        "bos_token": name("tokenizer.ggml.bos_token_id"),
        "eos_token": name("tokenizer.ggml.eos_token_id"),
        "pad_token": name("tokenizer.ggml.padding_token_id"),
        "unk_token": name("tokenizer.ggml.unknown_token_id"),
        "chat_template": field(reader, "tokenizer.chat_template", ""),
    }
    return tok, {k: v for k, v in config.items() if v is not None}


def check_against_fixture(tok):
    """Encodes the tokenizer corpus and compares with the committed SmolLM2 ids."""
    corpus_path = os.path.join(FIXTURES, "corpus.json")
    ids_path = os.path.join(FIXTURES, "smollm2_ids.json")
    if not (os.path.exists(corpus_path) and os.path.exists(ids_path)):
        print("export_gguf_tokenizer: no fixture to check against")
        return
    with open(corpus_path, encoding="utf-8") as f:
        corpus = json.load(f)
    with open(ids_path, encoding="utf-8") as f:
        rows = json.load(f)
    if isinstance(rows, dict):
        rows = rows.get("rows", rows.get("cases", []))
    bad = 0
    for case, row in zip(corpus, rows):
        text = (bytes.fromhex(case["hex"]).decode("utf-8", errors="replace") if "hex" in case
                else case["text"])
        if tok.encode(text, add_special_tokens=False).ids != row["ids"]:
            bad += 1
    print(f"export_gguf_tokenizer: {len(rows) - bad}/{len(rows)} fixture strings agree")
    if bad:
        raise SystemExit("export_gguf_tokenizer: the export disagrees with smollm2_ids.json")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", default=os.path.join(ROOT, "models",
                                                   "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    tok, config = build(GGUFReader(args.gguf))
    check_against_fixture(tok)
    os.makedirs(args.out, exist_ok=True)
    tok.save(os.path.join(args.out, "tokenizer.json"))
    with open(os.path.join(args.out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"export_gguf_tokenizer: wrote {args.out}/tokenizer.json "
          f"({tok.get_vocab_size()} tokens) and tokenizer_config.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
