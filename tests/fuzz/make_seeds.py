#!/usr/bin/env python3
"""Writes the committed seed corpora of tests/fuzz/corpus/<target>/ (small files, standard library
only). GGUF seeds include the shapes of past advisories against other GGUF parsers: huge counts,
overflowing lengths and sizes, zero and huge dimensions, offsets past the end, misaligned data,
bad alignment, unknown types. Request seeds reuse the bad-request corpus of tests/integration.

Usage: python3 tests/fuzz/make_seeds.py   (rewrites the seed files; names are stable)
"""
import importlib.util
import json
import types
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CORPUS = HERE / "corpus"
U64 = 2 ** 64 - 1


def write(target, name, data):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    (d / name).write_bytes(data)


# ---------------------------------------------------------------- GGUF
def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def kv(key, typ, payload):
    return gstr(key) + struct.pack("<I", typ) + payload


def kv_str(key, s):
    return kv(key, 8, gstr(s))


def kv_u32(key, v):
    return kv(key, 4, struct.pack("<I", v))


def kv_f32(key, v):
    return kv(key, 6, struct.pack("<f", v))


def kv_arr(key, elem_type, items, pack):
    return kv(key, 9, struct.pack("<IQ", elem_type, len(items)) + b"".join(pack(x) for x in items))


def tinfo(name, ne, typ, offset, n_dims=None):
    n = len(ne) if n_dims is None else n_dims
    return gstr(name) + struct.pack("<I", n) + b"".join(struct.pack("<Q", x) for x in ne) + \
        struct.pack("<IQ", typ, offset)


def gguf(kvs, tensors, data=b"", version=3, n_tensors=None, n_kv=None, align=32):
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors) if n_tensors is None else n_tensors,
                                 len(kvs) if n_kv is None else n_kv)
    body = head + b"".join(kvs) + b"".join(tensors)
    if align:
        body += b"\0" * ((-len(body)) % align)
    return body + data


def gguf_seeds():
    arch = kv_str("general.architecture", "llama")
    f32_4 = tinfo("t", [4], 0, 0)
    data16 = struct.pack("<4f", 1, 2, 3, 4)
    write("gguf", "valid_min", gguf([arch], [f32_4], data16))
    write("gguf", "valid_v2", gguf([arch], [f32_4], data16, version=2))
    write("gguf", "valid_no_tensors", gguf([arch, kv_u32("general.alignment", 64)], []))
    llama = [arch, kv_u32("llama.block_count", 1), kv_u32("llama.embedding_length", 8),
             kv_u32("llama.attention.head_count", 2), kv_u32("llama.attention.head_count_kv", 1),
             kv_u32("llama.feed_forward_length", 16), kv_u32("llama.context_length", 64),
             kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5),
             kv_f32("llama.rope.freq_base", 10000.0)]
    toks = ["<unk>", "<s>", "</s>", "a", "b", "ab", "Ġ", "Ġa", "<|im_start|>"]
    tok = [kv_str("tokenizer.ggml.model", "gpt2"), kv_str("tokenizer.ggml.pre", "smollm"),
           kv_arr("tokenizer.ggml.tokens", 8, toks, gstr),
           kv_arr("tokenizer.ggml.token_type", 5, [3, 3, 3, 1, 1, 1, 1, 1, 3],
                  lambda x: struct.pack("<i", x)),
           kv_arr("tokenizer.ggml.merges", 8, ["a b", "Ġ a"], gstr),
           kv(("tokenizer.ggml.bos_token_id"), 4, struct.pack("<I", 1)),
           kv(("tokenizer.ggml.eos_token_id"), 4, struct.pack("<I", 2)),
           kv_str("tokenizer.chat_template", "{% for m in messages %}{{ m.content }}{% endfor %}")]
    write("gguf", "valid_llama_tok", gguf(llama + tok, [f32_4], data16))
    spm = [kv_str("tokenizer.ggml.model", "llama"),
           kv_arr("tokenizer.ggml.tokens", 8, ["<unk>", "<s>", "</s>", "<0x41>", "▁", "▁a", "a"],
                  gstr),
           kv_arr("tokenizer.ggml.scores", 6, [0, 0, 0, 0, -1, -2, -3],
                  lambda x: struct.pack("<f", x)),
           kv_arr("tokenizer.ggml.token_type", 5, [2, 3, 3, 6, 1, 1, 1],
                  lambda x: struct.pack("<i", x))]
    write("gguf", "valid_spm_tok", gguf([arch] + spm, []))
    # Every scalar type and nested arrays.
    scalars = [kv("u8", 0, b"\x01"), kv("i8", 1, b"\xff"), kv("u16", 2, b"\1\0"),
               kv("i16", 3, b"\xff\xff"), kv("i32", 5, b"\xff\xff\xff\xff"),
               kv("b", 7, b"\x02"), kv("u64", 10, struct.pack("<Q", U64)),
               kv("i64", 11, struct.pack("<q", -1)), kv("f64", 12, struct.pack("<d", 1e308)),
               kv("nested", 9, struct.pack("<IQ", 9, 2) + struct.pack("<IQ", 4, 1) + b"\1\0\0\0" +
                  struct.pack("<IQ", 8, 1) + gstr("x"))]
    write("gguf", "all_types", gguf([arch] + scalars, []))
    # Advisory shapes: counts.
    write("gguf", "adv_huge_n_tensors", gguf([arch], [], n_tensors=U64))
    write("gguf", "adv_huge_n_kv", gguf([arch], [], n_kv=2 ** 62))
    write("gguf", "adv_n_kv_wraps", gguf([arch], [], n_kv=2 ** 63 + 1))
    write("gguf", "adv_string_len_huge", b"GGUF" + struct.pack("<IQQ", 3, 0, 1) +
          struct.pack("<Q", U64) + b"key")
    write("gguf", "adv_string_len_wraps", b"GGUF" + struct.pack("<IQQ", 3, 0, 1) +
          struct.pack("<Q", U64 - 15) + b"k" * 32)
    write("gguf", "adv_array_count_overflow", gguf([kv("a", 9, struct.pack("<IQ", 10, 2 ** 61 + 1))],
                                                   []))
    write("gguf", "adv_array_of_strings_huge", gguf([kv("a", 9, struct.pack("<IQ", 8, 2 ** 40))],
                                                    []))
    deep = struct.pack("<IQ", 9, 1) * 2000 + struct.pack("<IQ", 4, 0)
    write("gguf", "adv_array_nesting_deep", gguf([kv("a", 9, deep)], []))
    write("gguf", "adv_kv_type_unknown", gguf([kv("a", 13, b"\0" * 8)], []))
    write("gguf", "adv_array_elem_type_unknown", gguf([kv("a", 9, struct.pack("<IQ", 99, 1))], []))
    write("gguf", "adv_version_1", gguf([arch], [f32_4], data16, version=1))
    write("gguf", "adv_version_huge", gguf([arch], [f32_4], data16, version=0xFFFFFFFF))
    write("gguf", "adv_bad_magic", b"GGUG" + gguf([arch], [f32_4], data16)[4:])
    # Tensor infos: dimensions, sizes, offsets, types.
    write("gguf", "adv_zero_dim", gguf([arch], [tinfo("t", [4, 0], 0, 0)], data16))
    write("gguf", "adv_zero_ndims", gguf([arch], [tinfo("t", [], 0, 0)], data16))
    write("gguf", "adv_ndims_huge", gguf([arch], [tinfo("t", [4], 0, 0, n_dims=0xFFFFFFFF)], data16))
    write("gguf", "adv_ndims_5", gguf([arch], [tinfo("t", [1, 1, 1, 1, 4], 0, 0)], data16))
    write("gguf", "adv_dim_negative", gguf([arch], [tinfo("t", [2 ** 63 + 4], 0, 0)], data16))
    write("gguf", "adv_elems_overflow", gguf([arch], [tinfo("t", [2 ** 32, 2 ** 32, 16], 0, 0)],
                                             data16))
    write("gguf", "adv_nbytes_overflow", gguf([arch], [tinfo("t", [2 ** 61 + 1], 0, 0)], data16))
    write("gguf", "adv_offset_past_end", gguf([arch], [tinfo("t", [4], 0, 4096)], data16))
    write("gguf", "adv_offset_wraps", gguf([arch], [tinfo("t", [4], 0, U64 - 7)], data16))
    write("gguf", "adv_offset_misaligned", gguf([arch], [tinfo("t", [2], 0, 4)], data16))
    write("gguf", "adv_data_truncated", gguf([arch], [tinfo("t", [64], 0, 0)], data16))
    write("gguf", "adv_overlapping", gguf([arch], [tinfo("a", [4], 0, 0), tinfo("b", [4], 0, 0)],
                                          data16))
    write("gguf", "adv_duplicate_tensor", gguf([arch], [f32_4, f32_4], data16 * 2))
    write("gguf", "adv_duplicate_key", gguf([arch, arch], [f32_4], data16))
    write("gguf", "adv_tensor_type_unknown", gguf([arch], [tinfo("t", [4], 999, 0)], data16))
    write("gguf", "adv_q4_0_row_not_block", gguf([arch], [tinfo("t", [3], 2, 0)], b"\0" * 32))
    write("gguf", "adv_q4_k_tiny", gguf([arch], [tinfo("t", [256], 12, 0)], b"\0" * 16))
    write("gguf", "adv_empty_tensor_name", gguf([arch], [tinfo("", [4], 0, 0)], data16))
    for a in (0, 3, 2 ** 31, U64):
        payload = kv("general.alignment", 10 if a > 2 ** 32 else 4,
                     struct.pack("<Q", a) if a > 2 ** 32 else struct.pack("<I", a))
        write("gguf", f"adv_alignment_{a}", gguf([payload], [f32_4], data16, align=0))
    write("gguf", "adv_alignment_wrong_type", gguf([kv_str("general.alignment", "32")], [f32_4],
                                                   data16))
    write("gguf", "adv_tokens_not_strings", gguf([arch, kv_arr("tokenizer.ggml.tokens", 4, [1, 2],
                                                               lambda x: struct.pack("<I", x))], []))
    write("gguf", "adv_token_type_short", gguf(
        [kv_str("tokenizer.ggml.model", "gpt2"), kv_arr("tokenizer.ggml.tokens", 8, toks, gstr),
         kv_arr("tokenizer.ggml.token_type", 5, [1], lambda x: struct.pack("<i", x)),
         kv(("tokenizer.ggml.eos_token_id"), 4, struct.pack("<I", 10 ** 9))], []))
    write("gguf", "adv_llama_zero_heads", gguf(
        [arch, kv_u32("llama.block_count", 1), kv_u32("llama.embedding_length", 8),
         kv_u32("llama.attention.head_count", 0)], []))
    full = gguf(llama + tok, [f32_4], data16)
    for cut in (3, 8, 20, 24, 40, len(full) // 2, len(full) - 1):
        write("gguf", f"truncated_{cut}", full[:cut])
    write("gguf", "empty", b"")


# ---------------------------------------------------------------- safetensors (+ config.json)
def st(header, data=b"", hlen=None):
    h = json.dumps(header).encode() if not isinstance(header, bytes) else header
    return b"\0" + struct.pack("<Q", len(h) if hlen is None else hlen) + h + data


def safetensors_seeds():
    ok = {"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
          "b": {"dtype": "BF16", "shape": [4], "data_offsets": [16, 24]},
          "__metadata__": {"format": "pt"}}
    write("safetensors", "valid", st(ok, b"\0" * 24))
    write("safetensors", "valid_scalar", st({"s": {"dtype": "F16", "shape": [],
                                                   "data_offsets": [0, 2]}}, b"\0\0"))
    write("safetensors", "valid_empty_tensor", st({"e": {"dtype": "F32", "shape": [0, 3],
                                                         "data_offsets": [0, 0]}}))
    write("safetensors", "adv_header_len_huge", st(ok, b"\0" * 24, hlen=U64))
    write("safetensors", "adv_header_len_past_end", st(ok, b"\0" * 24, hlen=10 ** 6))
    write("safetensors", "adv_header_not_json", st(b"{not json", b""))
    write("safetensors", "adv_header_array", st([1, 2]))
    write("safetensors", "adv_offsets_reversed", st({"a": {"dtype": "F32", "shape": [2],
                                                           "data_offsets": [8, 0]}}, b"\0" * 8))
    write("safetensors", "adv_offsets_past_end", st({"a": {"dtype": "F32", "shape": [2],
                                                           "data_offsets": [0, 4096]}}, b"\0" * 8))
    write("safetensors", "adv_offsets_huge", st({"a": {"dtype": "F32", "shape": [2],
                                                       "data_offsets": [U64 - 3, U64 + 5]}}))
    write("safetensors", "adv_shape_overflow", st({"a": {"dtype": "F32",
                                                         "shape": [2 ** 32, 2 ** 32, 8],
                                                         "data_offsets": [0, 8]}}, b"\0" * 8))
    write("safetensors", "adv_shape_negative", st({"a": {"dtype": "F32", "shape": [-2],
                                                         "data_offsets": [0, 8]}}, b"\0" * 8))
    write("safetensors", "adv_shape_float", st({"a": {"dtype": "F32", "shape": [2.5],
                                                      "data_offsets": [0, 8]}}, b"\0" * 8))
    write("safetensors", "adv_size_mismatch", st({"a": {"dtype": "F32", "shape": [3],
                                                        "data_offsets": [0, 8]}}, b"\0" * 8))
    write("safetensors", "adv_dtype_unknown", st({"a": {"dtype": "F128", "shape": [1],
                                                        "data_offsets": [0, 16]}}, b"\0" * 16))
    write("safetensors", "adv_fields_missing", st({"a": {"dtype": "F32"}}, b"\0" * 8))
    write("safetensors", "adv_fields_wrong_type", st({"a": {"dtype": 5, "shape": "x",
                                                            "data_offsets": {"a": 1}}}))
    write("safetensors", "adv_overlap", st({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                            "b": {"dtype": "F32", "shape": [2],
                                                  "data_offsets": [0, 8]}}, b"\0" * 8))
    write("safetensors", "truncated_4", b"\0\x10\0\0")
    base = json.loads((ROOT / "tests/fixtures/tiny_llama/config.json").read_text())
    write("safetensors", "config_tiny_llama", b"\x01" + json.dumps(base).encode())
    hf = ROOT / "tests/fixtures/model/hf_tiny/config.json"
    if hf.exists():
        write("safetensors", "config_hf_tiny", b"\x01" + hf.read_bytes())
    variants = {
        "rope_llama3": {"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1,
                                         "high_freq_factor": 4,
                                         "original_max_position_embeddings": 8192}},
        "rope_linear": {"rope_scaling": {"type": "linear", "factor": 0.0}},
        "qwen2": {"model_type": "qwen2", "attention_bias": True},
        "zero_heads": {"num_attention_heads": 0},
        "heads_not_dividing": {"num_key_value_heads": 3},
        "negative_hidden": {"hidden_size": -64},
        "huge_layers": {"num_hidden_layers": 2 ** 62},
        "wrong_types": {"hidden_size": "64", "vocab_size": 1.5, "rms_norm_eps": "x"},
        "eos_list": {"eos_token_id": [2, 3, -1]},
        "unknown_type": {"model_type": "gpt_neox"},
    }
    for name, patch in variants.items():
        cfg = dict(base)
        cfg.update(patch)
        write("safetensors", f"config_{name}", b"\x01" + json.dumps(cfg).encode())
    write("safetensors", "config_not_object", b"\x01[1,2,3]")


# ---------------------------------------------------------------- tokenizer, chat template
def tokenizer_seeds():
    texts = ["Hello, world!", "  leading spaces and\ttabs\n\nnewlines", "12345 678.9",
             "<|im_start|>user\nhi<|im_end|>", "<s>[INST] x [/INST]</s>", "<0x41><unk>",
             "héllo wörld — “quotes” 日本語 中文 한국어 🙂👍🏽", "a" * 300, " " * 64,
             "don't I'll we've", "\x00\x01\x7f", "▁▁▁"]
    for i, t in enumerate(texts):
        for sel in (0x30, 0x01 | 0x30, 0x02 | 0x70):
            write("tokenizer", f"text_{i}_{sel:02x}", bytes([sel]) + t.encode())
    write("tokenizer", "bad_utf8", b"\x31\xff\xfe\xc3\x28\xed\xa0\x80\xf0\x9f\x98")
    write("tokenizer", "ids", b"\x00" + struct.pack("<8i", 0, 1, 2, 255, -1, 2 ** 31 - 1, 300, 49151))


def request_framing_seeds():
    # Byte 0: the piece size the scanner is fed in; then one request's bytes.
    heads = [
        b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
        b"POST /v1/completions HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
        b"POST / HTTP/1.1\r\nContent-Length: 38\r\nContent-Length: 5\r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\nWiki\r\n0\r\nT: v\r\n\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nab",
        b"GET / HTTP/1.1\nHost: x\n\n",
        b"GET / HTTP/2.0\r\n\r\n",
        b"GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
        b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(20)) + b"\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n",
    ]
    for i, h in enumerate(heads):
        for piece in (0, 3):
            write("request_framing", f"head_{i:02d}_{piece}", bytes([piece]) + h)


def chat_template_seeds():
    msgs = {"messages": [{"role": "system", "content": "Be brief."},
                         {"role": "user", "content": "What is 2+2?"},
                         {"role": "assistant", "content": "4"},
                         {"role": "user", "content": "Thanks"}]}
    for f in sorted((ROOT / "tests/fixtures/chat/templates").glob("*.jinja")):
        write("chat_template", f"fixture_{f.stem}", f.read_bytes() + b"\0" + json.dumps(msgs).encode())
    bombs = {
        "loop_huge": "{% for i in range(1000000000) %}x{% endfor %}",
        "loop_nested": "{% for a in range(100000) %}{% for b in range(100000) %}{{ a }}{% endfor %}{% endfor %}",
        "string_mul": "{{ 'x' * 1000000000 }}",
        "string_doubling": "{% set s = namespace(v='xx') %}{% for i in range(64) %}{% set s.v = s.v + s.v %}{% endfor %}{{ s.v|length }}",
        "macro_recursion": "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
        "deep_parens": "{{ " + "(" * 1000 + "1" + ")" * 1000 + " }}",
        "deep_ifs": "{% if true %}" * 1000 + "x" + "{% endif %}" * 1000,
        "raise": "{{ raise_exception('nope') }}",
        "unknown_tag": "{% frobnicate %}",
        "unterminated": "{% for m in messages %}{{ m.content",
        "filters": "{{ messages|tojson }}{{ messages[0].content|upper|trim|length }}{{ 'a,b'.split(',')|join('-') }}",
        "slices": "{{ messages[::-1][0].content[1:-1] }}{{ messages[-100] }}{{ 'abc'[99:] }}",
        "loop_vars": "{% for m in messages %}{{ loop.index }}{{ loop.last }}{{ loop.previtem }}{% endfor %}",
        "dict_items": "{% for k, v in {'a': 1, 'b': [1,2]}.items() %}{{ k }}={{ v }}{% endfor %}",
        "int_overflow": "{{ 9223372036854775807 + 1 }}{{ -9223372036854775808 // -1 }}{{ 1 % 0 }}{{ 1 / 0 }}",
        "strftime": "{{ strftime_now('%Y-%m-%d') }}",
    }
    for name, src in bombs.items():
        write("chat_template", f"bomb_{name}", src.encode() + b"\0" + json.dumps(msgs).encode())
    write("chat_template", "ctx_tools", b"{{ tools|tojson }}{{ messages|length }}\0" +
          json.dumps({"tools": [{"type": "function", "function": {"name": "f"}}], **msgs}).encode())
    write("chat_template", "ctx_weird_messages", b"{% for m in messages %}{{ m['role'] }}{% endfor %}\0" +
          b'[1, null, {"role": {"x": 1}}, "str"]')


# ---------------------------------------------------------------- requests
def load_integration_corpus():
    path = ROOT / "tests/integration/test_bad_requests.py"
    if not path.exists():
        return []
    for name in ("pytest", "requests"):  # only corpus() is used; stub what is not installed
        try:
            importlib.import_module(name)
        except ImportError:
            stub = types.ModuleType(name)
            stub.mark = types.SimpleNamespace(parametrize=lambda *a, **k: (lambda f: f))
            sys.modules[name] = stub
    spec = importlib.util.spec_from_file_location("bad_requests", path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)  # needs pytest + requests importable
    except ImportError as e:
        print(f"make_seeds: skipping the integration corpus ({e})", file=sys.stderr)
        return []
    return mod.corpus()


def request_seeds():
    good_c = [{"prompt": "Hello", "max_tokens": 8},
              {"prompt": ["a", "b"], "n": 2, "max_tokens": 4, "temperature": 0.7, "top_p": 0.9,
               "top_k": 40, "seed": 7, "stop": ["\n", "END"], "logprobs": 3, "stream": True,
               "stream_options": {"include_usage": True}},
              {"prompt": [1, 2, 3], "logit_bias": {"5": -100, "6": 50}, "stop_token_ids": [258],
               "ignore_eos": True, "min_tokens": 1, "max_tokens": 3, "priority": -1, "timeout": 30},
              {"prompt": [[1, 2], [3]], "max_tokens": 2, "model": "fuzz-model", "user": "u",
               "presence_penalty": 1, "frequency_penalty": -1, "repetition_penalty": 1.1,
               "min_p": 0.05}]
    good_m = [{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4},
              {"messages": [{"role": "system", "content": "s"},
                            {"role": "user", "content": [{"type": "text", "text": "a"},
                                                         {"type": "text", "text": "b"}]},
                            {"role": "assistant", "content": None},
                            {"role": "tool", "content": "r"}],
               "max_completion_tokens": 3, "logprobs": True, "top_logprobs": 2, "n": 2,
               "stream": True, "seed": 1}]
    for i, b in enumerate(good_c):
        write("completion_request", f"good_{i}", json.dumps(b))
    for i, b in enumerate(good_m):
        write("chat_request", f"good_{i}", json.dumps(b))
    for i, (_, (path, data), _, _) in enumerate(load_integration_corpus()):
        if len(data) > 4096:
            continue
        target = "chat_request" if "chat" in path else "completion_request"
        write(target, f"integration_{i:03d}", data)
    write("completion_request", "deep_nesting", "[" * 5000)
    write("completion_request", "big_ints", '{"prompt":[1e400, -0, 18446744073709551616],"max_tokens":1e999}')
    write("chat_request", "deep_nesting", '{"messages":' + "[" * 5000)
    # Regression: a number out of double range made parse_object's re-parse throw
    # json::out_of_range (406), which only json::parse_error was caught for.
    write("completion_request", "regress_number_overflow", '{"prompt":"a","max_tokens":1e400}')
    write("chat_request", "regress_number_overflow",
          '{"messages":[{"role":"user","content":"a"}],"temperature":-1e400}')
    write("chat_request", "template_injection",
          json.dumps({"messages": [{"role": "user", "content": "{{ 7*7 }}{% for i in range(9) %}"}]}))


def structured_output_seeds():
    """response_format / structured_outputs / guided_* on both endpoints, good and bad shapes."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    forms = {
        "rf_json_object": {"response_format": {"type": "json_object"}},
        "rf_json_schema": {"response_format": {"type": "json_schema", "json_schema": {
            "name": "s", "schema": schema, "strict": True, "description": "d"}}},
        "rf_unknown": {"response_format": {"type": "xml"}},
        "so_json": {"structured_outputs": {"json": schema}},
        "so_json_string": {"structured_outputs": {"json": json.dumps(schema)}},
        "so_regex": {"structured_outputs": {"regex": "[a-z]+"}},
        "so_choice": {"structured_outputs": {"choice": ["yes", "no"]}},
        "so_grammar": {"structured_outputs": {"grammar": 'root ::= "a" | "b"'}},
        "so_two": {"structured_outputs": {"regex": "a", "choice": ["b"]}},
        "guided_choice": {"guided_choice": ["x", "y"]},
        "guided_json_and_rf": {"guided_json": schema, "response_format": {"type": "json_object"}},
    }
    for name, extra in forms.items():
        write("completion_request", name, json.dumps({"prompt": "Hi", "max_tokens": 4, **extra}))
        write("chat_request", name, json.dumps(
            {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, **extra}))


def pb_varint(v):
    v &= U64
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pb(field, wire, payload):
    key = pb_varint((field << 3) | wire)
    if wire == 0:
        return key + pb_varint(payload)
    if wire == 2:
        return key + pb_varint(len(payload)) + payload
    if wire == 5:
        return key + struct.pack("<f", payload)
    raise ValueError(wire)


def pb_packed(field, values):
    return pb(field, 2, b"".join(pb_varint(v) for v in values))


def grpc_seeds():
    seeds = {
        "text": pb(2, 2, b"Hello") + pb(4, 0, 8),
        "ids": pb_packed(3, [1, 2, 3]) + pb(4, 0, 2) + pb(5, 5, 0.0),
        "full": pb(1, 2, b"fuzz-model") + pb(2, 2, b"x") + pb(4, 0, 4) + pb(5, 5, 0.8) +
                pb(6, 5, 0.9) + pb(7, 0, 40) + pb(8, 5, 0.05) + pb(9, 5, 0.5) + pb(10, 5, -0.5) +
                pb(11, 5, 1.1) + pb(12, 2, pb(1, 0, 5) + pb(2, 5, -100.0)) + pb(13, 0, 42) +
                pb(14, 2, b"\n") + pb_packed(15, [258]) + pb(16, 0, 1) + pb(17, 0, 1) +
                pb(18, 0, 2) + pb(19, 0, 3) + pb(20, 0, 5) + pb(21, 2, b"rid") + pb(22, 0, 1) +
                pb(23, 0, 0),
        "both_prompts": pb(2, 2, b"x") + pb_packed(3, [1]),
        "neither_prompt": pb(4, 0, 4),
        "ids_negative": pb_packed(3, [U64, 2 ** 31]),
        "max_tokens_negative": pb(2, 2, b"x") + pb(4, 0, U64),
        "temp_nan": pb(2, 2, b"x") + key_nan(5),
        "top_p_inf": pb(2, 2, b"x") + pb(6, 5, float("inf")),
        "n_huge": pb(2, 2, b"x") + pb(18, 0, 2 ** 31 - 1),
        "logprobs_huge": pb(2, 2, b"x") + pb(19, 0, 1000),
        "logit_bias_out_of_vocab": pb(2, 2, b"x") + pb(12, 2, pb(1, 0, 10 ** 6) + pb(2, 5, 1.0)),
        "stop_many": pb(2, 2, b"x") + b"".join(pb(14, 2, b"s%d" % i) for i in range(40)),
        "stop_empty": pb(2, 2, b"x") + pb(14, 2, b""),
        "model_other": pb(1, 2, b"gpt-4") + pb(2, 2, b"x"),
        "prompt_invalid_utf8": pb(2, 2, b"\xff\xfe"),
        "prompt_long": pb(2, 2, b"a" * 3000),
        "min_gt_max": pb(2, 2, b"x") + pb(4, 0, 1) + pb(17, 0, 5),
        "truncated": (pb(2, 2, b"Hello") + pb(4, 0, 8))[:-3],
        "so_json": pb(2, 2, b"x") + pb(25, 2, pb(1, 2, b'{"type":"object"}')),
        "so_json_bad": pb(2, 2, b"x") + pb(25, 2, pb(1, 2, b"[1,")),
        "so_regex": pb(2, 2, b"x") + pb(25, 2, pb(2, 2, b"[0-9]+")),
        "so_choice": pb(2, 2, b"x") + pb(25, 2, pb(3, 2, pb(1, 2, b"yes") + pb(1, 2, b"no"))),
        "so_grammar": pb(2, 2, b"x") + pb(25, 2, pb(4, 2, b'root ::= "a"')),
        "so_json_object": pb(2, 2, b"x") + pb(25, 2, pb(5, 0, 1)),
        "so_empty": pb(2, 2, b"x") + pb(25, 2, b""),
    }
    for name, data in seeds.items():
        write("grpc_request", name, data)


def key_nan(field):
    return pb_varint((field << 3) | 5) + struct.pack("<I", 0x7FC00000)


def bounded_json_seeds():
    """bounded_json: byte 0 the depth limit (1 + b % 64), byte 1 the tree budget ((1 + b) KiB)."""
    def seed(name, depth, kib, text):
        write("bounded_json", name, bytes([depth - 1, kib - 1]) + text.encode())
    seed("object", 8, 64, json.dumps({"a": [1, 2.5, "x", None, True], "b": {"c": {}}}))
    seed("depth_at_limit", 16, 64, "[" * 16 + "]" * 16)
    seed("depth_past_limit", 16, 64, "[" * 17 + "]" * 17)
    seed("deep_unclosed", 8, 64, "[{\"a\":" * 40)
    seed("wide_empties", 64, 1, "[" + "[],{}," * 300 + "0]")
    seed("long_keys", 4, 4, json.dumps({("k%d" % i) * 20: "v" * 30 for i in range(40)}))
    seed("not_json", 8, 64, "{\"a\" 1}")
    seed("scalar_trailing", 8, 64, "1 2")
    # Found by the fuzzer: a syntax error's message quotes the text, which may name a limit.
    seed("syntax_error_quotes_a_key", 8, 64, '{"f"" [[[(server.max_json_depth)')


def messages_request_seeds():
    """/v1/messages bodies; the same target also streams each seed as a model reply, so reply
    shapes (generic tool JSON, Hermes tags) are seeds too."""
    seeds = {
        "good_text": {"model": "fuzz-model", "max_tokens": 8, "system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=1.2.3.abc;"},
            {"type": "text", "text": "Be brief."}], "messages": [{"role": "user", "content": "hi"}]},
        "good_tools": {"model": "fuzz-model", "max_tokens": 8, "tools": [
            {"name": "f", "input_schema": {"type": "object", "properties": {"a": {"type": "string"}}}}],
            "tool_choice": {"type": "any", "disable_parallel_tool_use": True}, "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "t", "signature": ""},
                    {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": "b"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1",
                     "content": [{"type": "text", "text": "r"}], "is_error": True},
                    {"type": "text", "text": "ok"}]}],
            "thinking": {"type": "enabled", "budget_tokens": 1024}, "stop_sequences": ["END"]},
        "image_block": {"model": "fuzz-model", "max_tokens": 8, "messages": [
            {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": ""}}]}]},
    }
    for name, body in seeds.items():
        write("messages_request", name, json.dumps(body))
    write("messages_request", "reply_generic",
          '{"tool_calls": [{"name": "f", "arguments": {"a": "\\u00e9\\ud83d\\ude00\\"}"}}]}')
    write("messages_request", "reply_hermes", 'Text <tool_call>\n{"name": "f", "arguments": {"a": 1}}'
          '\n</tool_call>\n<tool_call>bad</tool_call> <tool_ca')
    write("messages_request", "reply_response", '{"response": {"x": [1, "}"]}}')


def main():
    bounded_json_seeds()
    messages_request_seeds()
    gguf_seeds()
    safetensors_seeds()
    tokenizer_seeds()
    request_framing_seeds()
    chat_template_seeds()
    request_seeds()
    structured_output_seeds()
    grpc_seeds()
    for d in sorted(CORPUS.iterdir()):
        files = list(d.iterdir())
        print(f"{d.name}: {len(files)} seeds, {sum(f.stat().st_size for f in files)} bytes")


if __name__ == "__main__":
    main()
