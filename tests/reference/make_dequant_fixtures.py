#!/usr/bin/env python3
"""Reference fixtures for dequantize_row: random raw blocks of every quantized type and the f32
values the `gguf` package's dequantizer (gguf.quants.dequantize) gives for them.

Writes tests/fixtures/dequant/<TYPE>.raw (the blocks) and <TYPE>.f32 (little-endian float32).
Q8_1 and Q8_K have no dequantizer in the gguf package; their expected values are d * qs computed
here with numpy. Run: /work/refvenv/bin/python tests/reference/make_dequant_fixtures.py
"""
from pathlib import Path

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType as T
from gguf.quants import dequantize

OUT = Path(__file__).resolve().parents[1] / "fixtures" / "dequant"
N_BLOCKS = 6

# Byte offsets of the f16 scale fields inside each block (see quant_blocks.h).
F16_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0], T.Q8_1: [0, 2],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
}


def block_size(qtype):
    # gguf-py still lists Q8_1 with f32 d and s (40 bytes); ggml's block_q8_1 is two f16 (36).
    return (32, 36) if qtype == T.Q8_1 else GGML_QUANT_SIZES[qtype]


def random_blocks(rng, qtype):
    block_elems, block_bytes = block_size(qtype)
    raw = rng.integers(0, 256, size=(N_BLOCKS, block_bytes), dtype=np.uint8)
    if qtype == T.Q8_K:  # f32 scale at offset 0
        d = rng.uniform(-0.05, 0.05, size=N_BLOCKS).astype("<f4")
        raw[:, 0:4] = d.view(np.uint8).reshape(N_BLOCKS, 4)
    for off in F16_FIELDS.get(qtype, []):
        s = rng.uniform(-0.5, 0.5, size=N_BLOCKS).astype("<f2")
        raw[:, off:off + 2] = s.view(np.uint8).reshape(N_BLOCKS, 2)
    return raw, block_elems


def expected(raw, qtype, block_elems):
    if qtype == T.Q8_1:
        d = raw[:, 0:2].copy().view("<f2").astype(np.float32)
        qs = raw[:, 4:36].view(np.int8).astype(np.float32)
        return (d * qs).reshape(-1)
    if qtype == T.Q8_K:
        d = raw[:, 0:4].copy().view("<f4")
        qs = raw[:, 4:260].view(np.int8).astype(np.float32)
        return (d * qs).reshape(-1)
    return dequantize(raw.reshape(-1), qtype).astype(np.float32).reshape(-1)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1234)
    types = [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q8_1, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K,
             T.Q6_K, T.Q8_K]
    for qtype in types:
        raw, block_elems = random_blocks(rng, qtype)
        exp = expected(raw, qtype, block_elems)
        assert exp.size == N_BLOCKS * block_elems and np.all(np.isfinite(exp)), qtype.name
        (OUT / f"{qtype.name}.raw").write_bytes(raw.tobytes())
        (OUT / f"{qtype.name}.f32").write_bytes(exp.astype("<f4").tobytes())
    # Plain types: F16 and BF16 bit patterns (all finite) and their f32 values.
    h = rng.standard_normal(256).astype("<f2")
    (OUT / "F16.raw").write_bytes(h.tobytes())
    (OUT / "F16.f32").write_bytes(dequantize(h.view(np.uint8), T.F16).astype("<f4").tobytes())
    b = (rng.standard_normal(256).astype("<f4").view("<u4") >> 16).astype("<u2")
    (OUT / "BF16.raw").write_bytes(b.tobytes())
    (OUT / "BF16.f32").write_bytes(dequantize(b.view(np.uint8), T.BF16).astype("<f4").tobytes())
    print(f"wrote {len(types) + 2} types to {OUT}")


if __name__ == "__main__":
    main()
