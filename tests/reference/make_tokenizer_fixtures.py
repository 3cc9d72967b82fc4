#!/usr/bin/env python3
"""Makes the tokenizer oracle fixtures in tests/fixtures/tokenizer/ with HF `tokenizers`.

Run with the reference venv:  /work/refvenv/bin/python tests/reference/make_tokenizer_fixtures.py
       [--model models/SmolLM2-135M-Instruct.Q4_1.gguf]

Outputs (all small):
  corpus.json            the >= 300 test strings (valid text as "text", invalid UTF-8 as "hex")
  smollm2_ids.json       SmolLM2 ids per corpus string, from a tokenizers.Tokenizer built from the
                         GGUF vocab + merges with SmolLM2's own pre-tokenizer (see below)
  pretokenizer_splits.json  piece byte lengths per string for the gpt2 / smollm / llama-bpe /
                         qwen2 regex sequences, from tokenizers' own pre-tokenizers
  spm/tokenizer.json, spm/tokenizer_config.json, spm/tokenizer.gguf, spm_ids.json
                         a tiny SentencePiece BPE model (byte fallback) trained here, written as a
                         Llama-2 style tokenizer.json and as a GGUF (tokenizer.ggml.model = llama)
  bytelevel/tokenizer.json, bytelevel/tokenizer_config.json, bytelevel_ids.json
                         a tiny byte-level BPE trained here with the Llama-3 Split regex

Invalid UTF-8: HF tokenizers only takes Python str, so the oracle decodes the bytes with
`bytes.decode("utf-8", errors="replace")` (each maximal ill-formed subpart -> one U+FFFD) and the
C++ tokenizer must do the same repair before encoding.

SmolLM2's pre-tokenizer: its HF tokenizer.json is Sequence[Digits(individual_digits=True),
ByteLevel(add_prefix_space=False, use_regex=True)] (llama.cpp names it "smollm": every digit on
its own, then the GPT-2 regex). transformers' GGUF conversion only installs a plain ByteLevel
pre-tokenizer, so it is built here explicitly; the script reports how many strings the two disagree
on, as a cross-check.
"""
import argparse
import json
import os
import random
import sys
import tempfile

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
from tokenizers import processors, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizer")

GPT2_RE = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
             r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
            r"|\s*[\r\n]+|\s+(?!\S)|\s+")


# ---------------------------------------------------------------------------------------------
# Corpus
def make_corpus():
    rng = random.Random(1234)
    c = []
    # English prose
    c += [
        "Hello world", "Hello, world!", "The quick brown fox jumps over the lazy dog.",
        "It's a test; isn't it? We'll see, they're sure I'd've known.", "I'M SHOUTING, YOU'RE NOT",
        "Don't stop believing.", "A", "a", ".", "?!", "hello", " hello", "hello ", "  hello  ",
        "Mr. Smith went to Washington on Jan. 5th, 2021.", "e.g. i.e. etc. vs. a.k.a.",
        "The year 1999 was followed by 2000 and 2001.", "She said \"yes\" and he said 'no'.",
        "Once upon a time, in a land far, far away, there lived a small tokenizer that loved bytes.",
        "SmolLM2 is a family of compact language models available in three sizes: 135M, 360M, and 1.7B parameters.",
    ]
    # Code
    c += [
        "def f(x):\n    return x * 2\n",
        "for i in range(10):\n\tprint(i)\n",
        "#include <stdio.h>\nint main() { printf(\"hi\\n\"); return 0; }\n",
        "template <typename T>\nstd::vector<T> v{1, 2, 3};\n",
        "auto x = std::make_unique<Foo>(a, b);  // comment",
        "{\"name\": \"llmserve\", \"version\": 1, \"tags\": [\"a\", \"b\"], \"ok\": true, \"x\": null}",
        "[1,2,3,{\"k\":-1.5e10}]",
        "if (a && b || !c) { x += y << 2; } else { z = ~w ^ 0xFF; }",
        "SELECT * FROM users WHERE id = 42 AND name LIKE '%bob%';",
        "<html><body><div class=\"x\">Hi</div></body></html>",
        "$ ls -la /usr/bin | grep python3 > out.txt 2>&1",
        "    indented with four spaces\n        and eight",
        "x=1;y=2;z=x+y;print(f'{z:>10}')",
        "class Foo(Bar):\n    \"\"\"Docstring.\"\"\"\n    pass\n",
        "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }",
        "// TODO(someone): fix this\n/* block */",
        "a_b_c __init__ self.__dict__ CONSTANT_VALUE camelCaseName",
        "https://example.com/path?query=1&other=two#frag",
        "user@example.com", "C:\\Users\\name\\file.txt",
    ]
    # Numbers
    c += ["0", "7", "42", "123", "1234", "12345", "123456", "1234567", "12345678901234567890",
          "3.14159", "-273.15", "1e-9", "1,000,000", "0x1F", "2024-01-31", "12:34:56", "$19.99",
          "100%", "½ ⅓ ¼", "①②③", "٣٤٥", "१२३", "Ⅻ", "²³", "a1b2c3", "v1.2.3", "ab12cd 34 ef"]
    for n in range(1, 25):
        c.append("".join(rng.choice("0123456789") for _ in range(n)))
    c += [f"{rng.randint(0, 10**9)} items" for _ in range(5)]
    # CJK, other scripts, RTL
    c += [
        "你好，世界！", "日本語のテキストです。", "한국어 텍스트", "中文 English mixed 混合",
        "東京タワーは333メートルです", "漢字かなカナ", "Привет, мир!", "Ελληνικά γράμματα",
        "مرحبا بالعالم", "שלום עולם", "English then עברית then English", "مرحبا 123 world",
        "हिन्दी भाषा", "ภาษาไทย", "Tiếng Việt có dấu", "Ünïcödé çharàctérs", "straße Maße",
        "\u200fRTL mark\u200f", "\u202eoverride\u202c",
    ]
    # Emoji
    c += [
        "😀", "😀😃😄", "emoji 😀 test", "👍🏽", "👍🏻👍🏼👍🏽👍🏾👍🏿", "👨‍👩‍👧‍👦", "👩‍💻 coding",
        "🏳️‍🌈", "❤️", "🇺🇸🇯🇵", "🤖 says hi 🤖", "a😀b", "🧑🏾‍🚀 astronaut", "#️⃣ keycap",
    ]
    # Combining marks
    c += ["e\u0301", "cafe\u0301", "n\u0303o", "a\u0300\u0301\u0302\u0303", "Z\u0351\u0352\u0353alg\u0354o",
          "\u0915\u094d\u0937", "o\u0308\u0332", "\u0301 leading combining"]
    # Whitespace
    c += [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\n\n\n\n\n", "\r\n", "\r\n\r\n", " \n ",
          "a\tb", "a \t b", "a\n\nb", "a\r\nb", "line1\nline2\n", "  leading", "trailing  ",
          "  both  ", "a" + " " * 20 + "b", "\n" * 12, "x\u00a0y", "x\u2003y", "x\u3000y",
          "x\u200by", "x\u2028y", "x\u0085y", "\u000b\u000c", " \t\n\r ", "end with space ",
          "tabs\tand\nnewlines\r\nmixed \t \n"]
    # Special-token text
    c += [
        "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_start|>user\nHi<|im_end|>\n",
        "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>assistant\n",
        "text<|endoftext|>more", "<|im_start|><|im_end|>", "<|im_start", "im_start|>",
        "<|im_start|x", "<<|im_end|>>", "<s>", "</s>", "<unk>", "<s>Hello</s>", "a <s> b </s> c",
        "<|begin_of_text|>Hi<|eot_id|>", "<|eot_id|>", " <|im_end|> ", "<repo_name>x<file_sep>",
    ]
    # Control / odd characters
    c += ["\x00", "a\x00b", "\x01\x02\x03", "\x7f", "\ufeffBOM", "\ufffd", "\U0010ffff", "\uffff",
          "~!@#$%^&*()_+-=[]{}|;:',.<>/?`", "''''", "'s 's 'S 'll 'LL", "...", "---", "___",
          "«quotes» „German“ ‘single’", "→ ← ↑ ↓ ∀ ∃ ∑ ∫ √ ∞", "™ © ®", "€ £ ¥ ₹"]
    # Long text
    prose = ("The tokenizer splits text into pieces with a regular expression, then merges byte "
             "pairs by rank. Numbers like 1234567 are split one digit at a time for SmolLM. ")
    c.append(prose * 8)
    c.append(("def add(a, b):\n    return a + b\n\n") * 10)
    c.append("日本語と English と 123 の混在テキスト。" * 10)
    # Random mixes
    atoms = ["hello", "world", " ", "  ", "\n", "\t", "123", "4", "😀", "👍🏽", "é", "e\u0301", "中文",
             "<|im_end|>", "<|endoftext|>", "<s>", "'s", "'LL", ",", ".", "!", "def", "()", "{}",
             "\r\n", "ß", "Ω", "٣", "𝔘𝔫𝔦", "\u00a0", "x", "Y", "__", "--", "0.5"]
    for _ in range(80):
        c.append("".join(rng.choice(atoms) for _ in range(rng.randint(1, 12))))
    for _ in range(40):
        n = rng.randint(1, 20)
        c.append("".join(chr(rng.choice([rng.randint(0x20, 0x7e), rng.randint(0xa0, 0x2fff),
                                         rng.randint(0x3000, 0x9fff), rng.randint(0x1f300, 0x1faff)]))
                         for _ in range(n)))
    texts = [{"text": t} for t in c]
    # Invalid UTF-8 byte sequences
    bad = [b"\xff", b"\xfe\xff", b"abc\x80def", b"\xc3", b"\xc3(", b"\xe2\x82", b"\xe2\x82(",
           b"\xf0\x9f\x98", b"\xf0\x9f\x98hello", b"\xed\xa0\x80", b"\xc0\xaf", b"\xe0\x80\xaf",
           b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80", b"ok \x80\x81\x82 ok", b"\xc2\xc2\xc2",
           b"<|im_end|>\xff<|im_end|>", b"\x9f\x98\x80", b"valid \xe4\xbd\xa0 then \xe4\xbd",
           b"tail \xf0"]
    for _ in range(10):
        bad.append(bytes(rng.randint(0, 255) for _ in range(rng.randint(1, 24))))
    # "text" here is the oracle's repair of the bytes (what the C++ utf8_sanitize must produce).
    texts += [{"hex": b.hex(), "text": b.decode("utf-8", errors="replace")} for b in bad]
    return texts


def as_str(case):
    if "hex" in case:
        return bytes.fromhex(case["hex"]).decode("utf-8", errors="replace")
    return case["text"]


def dump(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


def without_added_tokens(tok):
    j = json.loads(tok.to_str())
    j["added_tokens"] = []
    return Tokenizer.from_str(json.dumps(j))


def id_table(tok, corpus, add_special):
    plain = without_added_tokens(tok)
    rows = []
    for case in corpus:
        s = as_str(case)
        ids = tok.encode(s, add_special_tokens=add_special).ids
        raw = plain.encode(s, add_special_tokens=add_special).ids
        row = {"ids": ids}
        if raw != ids:
            row["ids_no_parse_special"] = raw
        decoded = tok.decode(ids, skip_special_tokens=False)
        if decoded != s:  # e.g. "<s>" prefixes, dropped characters, SentencePiece space quirks
            row["decoded"] = decoded
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------
# SmolLM2 (GGUF) oracle
def smollm2(model_path, corpus):
    from gguf import GGUFReader
    r = GGUFReader(model_path)
    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    types = r.fields["tokenizer.ggml.token_type"].contents()
    merges = [tuple(m.split(" ", 1)) for m in r.fields["tokenizer.ggml.merges"].contents()]
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t, ty in zip(tokens, types) if ty == 3])
    rows = id_table(tok, corpus, add_special=False)
    # Bytes whose GPT-2 character is not in the vocab (e.g. 0x04) are dropped by HF's BPE (no
    # unk token); such rows get a "decoded" text that differs from the input.
    missing = [c for c in pre_tokenizers.ByteLevel.alphabet() if c not in vocab]
    print(f"smollm2: {len(missing)} byte characters are not in the vocab")
    try:  # cross-check against transformers' own GGUF tokenizer conversion
        from transformers import AutoTokenizer
        hf = AutoTokenizer.from_pretrained(os.path.dirname(model_path),
                                           gguf_file=os.path.basename(model_path))
        diff = sum(hf.encode(as_str(c), add_special_tokens=False) != row["ids"]
                   for c, row in zip(corpus, rows))
        print(f"smollm2: transformers GGUF conversion differs on {diff}/{len(corpus)} strings")
    except Exception as e:  # noqa: BLE001 - optional cross-check only
        print("smollm2: transformers cross-check skipped:", e)
    return rows


# ---------------------------------------------------------------------------------------------
# Pre-tokenizer splits
def splits(corpus):
    pres = {
        "gpt2": pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        "smollm": pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                           pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)]),
        "llama-bpe": pre_tokenizers.Split(Regex(LLAMA3_RE), behavior="isolated"),
        "qwen2": pre_tokenizers.Split(Regex(QWEN2_RE), behavior="isolated"),
    }
    out = {}
    for name, pre in pres.items():
        rows = []
        for case in corpus:
            s = as_str(case)
            lens = [len(s[a:b].encode("utf-8")) for _, (a, b) in pre.pre_tokenize_str(s)]
            assert sum(lens) == len(s.encode("utf-8")), (name, s)
            rows.append(lens)
        out[name] = rows
    return out


# ---------------------------------------------------------------------------------------------
# Tiny SentencePiece BPE, as a Llama-2 style tokenizer.json and as a GGUF
def training_lines():
    rng = random.Random(7)
    words = ("the quick brown fox jumps over lazy dog hello world token piece model server engine "
             "cache block attention tokenizer byte merge score prefix space newline").split()
    lines = []
    for _ in range(4000):
        lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(3, 12)))
                     + rng.choice([".", "!", "?", ",", " 123", " 42", " 2024"]))
    lines += ["日本語のテキスト", "中文文本测试", "Ünïcödé çharàctérs", "def f(x): return x * 2",
              "{\"key\": [1, 2, 3]}", "Привет мир"] * 30
    return lines


def sentencepiece_tokenizer(workdir):
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as pb
    corpus_path = os.path.join(workdir, "spm.txt")
    with open(corpus_path, "w", encoding="utf-8") as f:
        f.write("\n".join(training_lines()))
    prefix = os.path.join(workdir, "tiny")
    spm.SentencePieceTrainer.train(
        input=corpus_path, model_prefix=prefix, vocab_size=600, model_type="bpe", hard_vocab_limit=False, byte_fallback=True,
        character_coverage=0.9995, normalization_rule_name="identity", remove_extra_whitespaces=False,
        add_dummy_prefix=True, split_digits=True, minloglevel=2)
    proto = pb.ModelProto()
    with open(prefix + ".model", "rb") as f:
        proto.ParseFromString(f.read())
    pieces = [(p.piece, p.score, p.type) for p in proto.pieces]
    vocab = {p: i for i, (p, _, _) in enumerate(pieces)}
    # Merges ranked by the score of the merged piece (as HF's SentencePiece conversion does).
    normal = {p: (s, i) for i, (p, s, t) in enumerate(pieces) if t == 1}
    ranked = []
    for piece, (score, idx) in normal.items():
        for k in range(1, len(piece)):
            a, b = piece[:k], piece[k:]
            if a in normal and b in normal:
                ranked.append((-score, idx, a, b))
    merges = [(a, b) for _, _, a, b in sorted(ranked)]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True,
                               byte_fallback=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t in ("<unk>", "<s>", "</s>")])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", 1)])
    return tok, pieces


def write_spm_gguf(path, pieces):
    import gguf
    w = gguf.GGUFWriter(path, "llama")
    w.add_tokenizer_model("llama")
    w.add_token_list([p for p, _, _ in pieces])
    w.add_token_scores([s for _, s, _ in pieces])
    w.add_token_types([t for _, _, t in pieces])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_space_prefix(True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# ---------------------------------------------------------------------------------------------
# Tiny byte-level BPE with the Llama-3 Split regex
def bytelevel_tokenizer():
    tok = Tokenizer(models.BPE(ignore_merges=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_RE), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<|begin_of_text|>", "<|eot_id|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(training_lines(), trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A $B",
        special_tokens=[("<|begin_of_text|>", 0)])
    return tok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    args = ap.parse_args()
    corpus = make_corpus()
    assert len(corpus) >= 300, len(corpus)
    dump(os.path.join(OUT, "corpus.json"), corpus)
    dump(os.path.join(OUT, "pretokenizer_splits.json"), splits(corpus))
    if os.path.exists(args.model):
        dump(os.path.join(OUT, "smollm2_ids.json"), smollm2(args.model, corpus))
    else:
        print("no model at", args.model, "- smollm2_ids.json not rewritten", file=sys.stderr)

    with tempfile.TemporaryDirectory() as work:
        spm_tok, pieces = sentencepiece_tokenizer(work)
    spm_dir = os.path.join(OUT, "spm")
    os.makedirs(spm_dir, exist_ok=True)
    spm_tok.save(os.path.join(spm_dir, "tokenizer.json"))
    dump(os.path.join(spm_dir, "tokenizer_config.json"), {
        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "add_bos_token": True,
        "add_eos_token": False,
        "chat_template": "{% for m in messages %}[INST] {{ m['content'] }} [/INST]{% endfor %}"})
    write_spm_gguf(os.path.join(spm_dir, "tokenizer.gguf"), pieces)
    rows = id_table(spm_tok, corpus, add_special=True)
    dump(os.path.join(OUT, "spm_ids.json"), rows)

    bl = bytelevel_tokenizer()
    bl_dir = os.path.join(OUT, "bytelevel")
    os.makedirs(bl_dir, exist_ok=True)
    bl.save(os.path.join(bl_dir, "tokenizer.json"))
    dump(os.path.join(bl_dir, "tokenizer_config.json"), {
        "bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "add_bos_token": True})
    rows = id_table(bl, corpus, add_special=True)
    dump(os.path.join(OUT, "bytelevel_ids.json"), rows)
    print(f"corpus: {len(corpus)} strings; fixtures in {OUT}")


if __name__ == "__main__":
    main()
