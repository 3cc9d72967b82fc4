#!/usr/bin/env python3
"""Reference fixtures for engine/model, made with independent writers and readers:

  tests/fixtures/model/tiny.gguf + tiny_gguf_expected.json   (gguf.GGUFWriter; every value type,
      nested arrays, F32/F16/Q8_0/Q4_1/Q4_K tensors; expected values from gguf.GGUFReader)
  tests/fixtures/model/hf_tiny/            config.json + model.safetensors (safetensors.numpy)
  tests/fixtures/model/hf_tiny_sharded/    the same split in two shards + index.json
  tests/fixtures/model/default_model_expected.json   config + a few tensors of the default model,
      read with gguf.GGUFReader (only when models/SmolLM2-135M-Instruct.Q4_1.gguf exists)

Run: /work/refvenv/bin/python tests/reference/make_model_fixtures.py
"""
import json
import shutil
from pathlib import Path

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T, GGUFValueType as V
from gguf.quants import dequantize
from safetensors.numpy import save_file

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "model"
MODEL = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"

# A tiny llama: hidden 32, 4 heads of 8, 2 kv heads, ffn 64, 2 layers, vocab 16.
H, NH, NKV, HD, FFN, L, VOCAB = 32, 4, 2, 8, 64, 2, 16


def tiny_weights(rng):
    w = {"token_embd.weight": (VOCAB, H), "output_norm.weight": (H,)}
    for i in range(L):
        w.update({
            f"blk.{i}.attn_norm.weight": (H,), f"blk.{i}.ffn_norm.weight": (H,),
            f"blk.{i}.attn_q.weight": (NH * HD, H), f"blk.{i}.attn_k.weight": (NKV * HD, H),
            f"blk.{i}.attn_v.weight": (NKV * HD, H), f"blk.{i}.attn_output.weight": (H, NH * HD),
            f"blk.{i}.ffn_gate.weight": (FFN, H), f"blk.{i}.ffn_up.weight": (FFN, H),
            f"blk.{i}.ffn_down.weight": (H, FFN),
        })
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in w.items()}


def random_quant(rng, qtype, rows, cols):
    block_elems, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(rows, cols // block_elems, block_bytes), dtype=np.uint8)
    scale_offsets = {T.Q8_0: [0], T.Q4_1: [0, 2], T.Q4_K: [0, 2]}[qtype]
    for off in scale_offsets:
        s = rng.uniform(-0.5, 0.5, size=raw.shape[:2]).astype("<f2")
        raw[:, :, off:off + 2] = s.view(np.uint8).reshape(*raw.shape[:2], 2)
    return raw.reshape(rows, -1)


def make_tiny_gguf(rng):
    path = OUT / "tiny.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 60000)
    w.add_int16("test.i16", -30000)
    w.add_uint32("test.u32", 4000000000)
    w.add_int32("test.i32", -2000000000)
    w.add_uint64("test.u64", 2**63 + 5)
    w.add_int64("test.i64", -(2**62))
    w.add_float32("test.f32", 1.5)
    w.add_float64("test.f64", -2.25)
    w.add_bool("test.bool", True)
    w.add_string("test.string", "héllo ▁world")
    w.add_key_value("test.arr_i16", [1, -2, 3], V.ARRAY, sub_type=V.INT16)
    w.add_key_value("test.arr_f32", [0.5, -1.0, 2.0], V.ARRAY, sub_type=V.FLOAT32)
    w.add_key_value("test.arr_bool", [True, False, True], V.ARRAY, sub_type=V.BOOL)
    w.add_array("test.arr_str", ["a", "", "ccc"])
    w.add_key_value("test.nested", [[1, 2], [3, 4, 5]], V.ARRAY)
    w.add_uint32("llama.block_count", L)
    w.add_uint32("llama.context_length", 256)
    w.add_uint32("llama.embedding_length", H)
    w.add_uint32("llama.feed_forward_length", FFN)
    w.add_uint32("llama.attention.head_count", NH)
    w.add_uint32("llama.attention.head_count_kv", NKV)
    w.add_float32("llama.rope.freq_base", 500000.0)
    w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-6)
    w.add_string("llama.rope.scaling.type", "linear")
    w.add_float32("llama.rope.scaling.factor", 4.0)
    w.add_uint32("tokenizer.ggml.bos_token_id", 1)
    w.add_uint32("tokenizer.ggml.eos_token_id", 2)
    w.add_array("tokenizer.ggml.tokens", [f"t{i}" for i in range(VOCAB)])
    weights = tiny_weights(rng)
    for name, arr in weights.items():
        if name == "token_embd.weight":
            w.add_tensor(name, random_quant(rng, T.Q8_0, VOCAB, H), raw_dtype=T.Q8_0)
        elif name.endswith("attn_q.weight"):
            w.add_tensor(name, random_quant(rng, T.Q4_1, NH * HD, H), raw_dtype=T.Q4_1)
        elif name.endswith("ffn_up.weight"):
            w.add_tensor(name, arr.astype(np.float16))
        else:
            w.add_tensor(name, arr)
    w.add_tensor("extra.q4k", random_quant(rng, T.Q4_K, 2, 256), raw_dtype=T.Q4_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def value_to_json(field):
    types = [int(t) for t in field.types]
    value = field.contents()
    return {"types": types, "value": value}


def describe_gguf(path, dequant_tensors, max_values=64):
    r = gguf.GGUFReader(str(path))
    out = {"version": int(r.fields["GGUF.version"].contents()), "alignment": int(r.alignment),
           "data_offset": int(r.data_offset), "metadata": {}, "tensors": []}
    for k, f in r.fields.items():
        if k.startswith("GGUF."):
            continue
        if k in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type"):
            c = f.contents()
            out["metadata"][k] = {"types": [int(t) for t in f.types], "count": len(c),
                                  "first": c[:3], "last": c[-1]}
            continue
        out["metadata"][k] = value_to_json(f)
    for t in r.tensors:
        info = {"name": t.name, "type": int(t.tensor_type), "ne": [int(x) for x in t.shape],
                "offset": int(t.data_offset), "nbytes": int(t.n_bytes)}
        if t.name in dequant_tensors:
            vals = dequantize(t.data, t.tensor_type).astype(np.float32).reshape(-1)
            info["first_values"] = [float(x) for x in vals[:max_values]]
            info["sum"] = float(vals.astype(np.float64).sum())
        out["tensors"].append(info)
    return r, out


def expected_config(r):
    f = {k: v.contents() for k, v in r.fields.items()
         if not k.startswith("tokenizer.ggml.token") and k != "tokenizer.ggml.merges"}
    arch = f["general.architecture"]
    heads = f[f"{arch}.attention.head_count"]
    names = {t.name for t in r.tensors}
    return {
        "architecture": arch, "hidden_size": f[f"{arch}.embedding_length"],
        "num_layers": f[f"{arch}.block_count"], "num_heads": heads,
        "num_kv_heads": f.get(f"{arch}.attention.head_count_kv", heads),
        "head_dim": f.get(f"{arch}.attention.key_length", f[f"{arch}.embedding_length"] // heads),
        "ffn_size": f[f"{arch}.feed_forward_length"],
        "vocab_size": f.get(f"{arch}.vocab_size", len(r.fields["tokenizer.ggml.tokens"].data)),
        "rms_norm_eps": f[f"{arch}.attention.layer_norm_rms_epsilon"],
        "rope_theta": f.get(f"{arch}.rope.freq_base", 10000.0),
        "max_context": f[f"{arch}.context_length"],
        "tie_word_embeddings": "output.weight" not in names,
        "bos_id": f.get("tokenizer.ggml.bos_token_id", -1),
        "eos_id": f.get("tokenizer.ggml.eos_token_id", -1),
        "pad_id": f.get("tokenizer.ggml.padding_token_id", -1),
        "parameter_count": int(sum(int(np.prod(t.shape)) for t in r.tensors)),
        "weight_bytes": int(sum(int(t.n_bytes) for t in r.tensors)),
        "tensor_count": len(r.tensors),
    }


def make_hf_dirs(rng):
    weights = tiny_weights(rng)
    hf = {}
    inv = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight"}
    sub = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
           "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
           "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
           "ffn_down": "mlp.down_proj"}
    for name, arr in weights.items():
        if name in inv:
            hf[inv[name]] = arr
        else:
            _, i, part, kind = name.split(".")
            hf[f"model.layers.{i}.{sub[part]}.{kind}"] = arr.astype(np.float16)
    hf["model.layers.0.self_attn.rotary_emb.inv_freq"] = np.ones(HD // 2, np.float32)  # skipped
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H,
              "num_hidden_layers": L, "num_attention_heads": NH, "num_key_value_heads": NKV,
              "intermediate_size": FFN, "vocab_size": VOCAB, "max_position_embeddings": 512,
              "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": True,
              "bos_token_id": 1, "eos_token_id": [2, 3], "torch_dtype": "float16",
              "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                               "high_freq_factor": 4.0, "original_max_position_embeddings": 128}}
    single = OUT / "hf_tiny"
    sharded = OUT / "hf_tiny_sharded"
    for d in (single, sharded):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        (d / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    save_file(hf, str(single / "model.safetensors"), metadata={"format": "pt"})
    names = sorted(hf)
    parts = [names[: len(names) // 2], names[len(names) // 2:]]
    weight_map = {}
    for k, part in enumerate(parts):
        fname = f"model-0000{k + 1}-of-00002.safetensors"
        save_file({n: hf[n] for n in part}, str(sharded / fname))
        weight_map.update({n: fname for n in part})
    (sharded / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}, indent=2) + "\n")
    expected = {"shapes": {k: list(v.shape) for k, v in hf.items()},
                "first_values": {k: [float(x) for x in v.reshape(-1)[:8].astype(np.float32)]
                                 for k, v in hf.items()}}
    (OUT / "hf_tiny_expected.json").write_text(json.dumps(expected, indent=1) + "\n")


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(42)
    path = make_tiny_gguf(rng)
    r, desc = describe_gguf(path, {"token_embd.weight", "blk.0.attn_q.weight", "blk.0.ffn_up.weight",
                                   "extra.q4k", "output_norm.weight"})
    desc["config"] = expected_config(r)
    (OUT / "tiny_gguf_expected.json").write_text(json.dumps(desc, indent=1, ensure_ascii=False) + "\n")
    make_hf_dirs(rng)
    if MODEL.exists():
        r, desc = describe_gguf(MODEL, {"token_embd.weight", "blk.0.attn_q.weight",
                                        "blk.0.attn_norm.weight"})
        desc["tensors"] = [t for t in desc["tensors"] if t["name"].startswith(("token_embd", "blk.0.", "output"))]
        desc["metadata"].pop("tokenizer.chat_template", None)
        desc["config"] = expected_config(r)
        (OUT / "default_model_expected.json").write_text(json.dumps(desc, indent=1) + "\n")
    print("wrote fixtures to", OUT)


if __name__ == "__main__":
    main()
