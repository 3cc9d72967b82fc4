#!/usr/bin/env python3
"""Makes tests/fixtures/quantize/: f32 weight rows of several distributions and what llama.cpp's
`llama-quantize --pure` makes of them in Q8_0, Q4_0 and Q4_K, the oracle of
tests/unit/kernels/quantize_weights_test.cpp (model.quantize's quantizer, issue 36).

How: the tiny K-quant fixture model's metadata and shapes (tests/fixtures/tiny_kquant/model.gguf:
hidden 256, ffn 512) with seeded random F32 weights is written as a GGUF, quantized by llama.cpp's
tool (ggml's reference quantizers: no importance matrix), and read back with the `gguf` package.
The package's own Q8_0 / Q4_0 quantizers (gguf.quants.quantize; it has none for Q4_K) must give
the same bytes: checked here, and the count of differing bytes is stored in index.json.

Writes index.json ({"cases": [{"name", "tensor", "rows", "cols"}], "gguf_package_diff_bytes":
{type: n}, "llamacpp_rms": {case: {type: rms error}}}), and per case <name>.f32 (rows x cols f32
LE) and <name>.<TYPE>.llamacpp (the quantized rows, GGML block layout).

  .venv-bench/bin/python tests/reference/make_quantize_fixtures.py \\
      [--quantize .deps/llama.cpp-0.3.36/build/bin/llama-quantize]
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gguf  # noqa: E402
from gguf_to_float import QT, dequantized, open_writer, write_tensors  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
SRC = ROOT / "tests" / "fixtures" / "tiny_kquant" / "model.gguf"
OUT = ROOT / "tests" / "fixtures" / "quantize"
ROWS = 32
TYPES = ["Q8_0", "Q4_0", "Q4_K"]


def case_data(name, shape, rng):
    """Weights of one distribution, in numpy shape [rows, cols]."""
    rows, cols = shape
    if name == "gauss":  # what trained weights look like, roughly
        return rng.standard_normal(shape) * 0.02
    if name == "heavy":  # heavy tails: a few large values set each block's scale
        return rng.standard_t(3, shape) * 0.02
    if name == "outlier":  # 0.5% of entries 20x larger
        x = rng.standard_normal(shape) * 0.02
        mask = rng.random(shape) < 0.005
        return np.where(mask, x * 20, x)
    if name == "offset":  # skewed: blocks whose minimum is far from zero (Q4_K's min)
        return rng.uniform(-0.01, 0.03, shape)
    if name == "mixed":  # per-row scales over 3 decades, zero and constant sub-blocks
        x = rng.standard_normal(shape) * (10.0 ** rng.uniform(-3, 0, (rows, 1)))
        blocks = x.reshape(rows, cols // 32, 32)
        blocks[rng.random((rows, cols // 32)) < 0.05] = 0.0
        const = rng.random((rows, cols // 32)) < 0.05
        blocks[const] = rng.uniform(-0.05, 0.05, (int(const.sum()), 1))
        return blocks.reshape(shape)
    if name == "grid":  # halfway between Q4_0 steps (rounding ties), f16-rounded as F16 weights
        blocks = rng.integers(-8, 8, (rows, cols // 32, 32)) + 0.5
        blocks[:, :, 0] = -8.0  # the block's largest magnitude sets d = max / -8
        scale = rng.uniform(0.001, 0.05, (rows, cols // 32, 1)) / 8.0
        return (blocks * scale).reshape(shape).astype(np.float16).astype(np.float32)
    raise ValueError(name)


CASES = {"gauss": "blk.0.attn_q.weight", "heavy": "blk.0.ffn_up.weight",
         "outlier": "blk.0.ffn_down.weight", "offset": "blk.1.attn_k.weight",
         "mixed": "blk.1.ffn_gate.weight", "grid": "blk.1.ffn_up.weight"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quantize", default=str(ROOT / ".deps/llama.cpp-0.3.36/build/bin/llama-quantize"))
    args = ap.parse_args()
    rng = np.random.default_rng(3601)
    reader = gguf.GGUFReader(str(SRC))
    by_tensor = {t: c for c, t in CASES.items()}
    tensors = []
    for name, arr in dequantized(reader):
        if arr.ndim == 2:
            data = case_data(by_tensor.get(name, "gauss"), arr.shape, rng)
        else:
            data = np.ones(arr.shape)
        tensors.append((name, data.astype(np.float32), QT.F32))
    src = {n: a for n, a, _ in tensors}
    OUT.mkdir(parents=True, exist_ok=True)
    index = {"cases": [], "gguf_package_diff_bytes": {}, "llamacpp_rms": {}}
    with tempfile.TemporaryDirectory() as tmp:
        f32 = pathlib.Path(tmp) / "f32.gguf"
        write_tensors(open_writer(f32, reader, gguf.LlamaFileType.ALL_F32), tensors)
        quantized = {}
        for t in TYPES:
            dst = pathlib.Path(tmp) / f"{t}.gguf"
            subprocess.run([args.quantize, "--pure", str(f32), str(dst), t], check=True,
                           capture_output=True)
            quantized[t] = {q.name: q for q in gguf.GGUFReader(str(dst)).tensors}
        for case, tensor in CASES.items():
            rows = src[tensor][:ROWS]
            index["cases"].append({"name": case, "tensor": tensor, "rows": rows.shape[0],
                                   "cols": rows.shape[1]})
            (OUT / f"{case}.f32").write_bytes(rows.astype("<f4").tobytes())
            index["llamacpp_rms"][case] = {}
            for t in TYPES:
                q = quantized[t][tensor]
                assert q.tensor_type.name == t, (tensor, q.tensor_type.name)
                raw = np.asarray(q.data).reshape(q.data.shape[0], -1)[:ROWS]
                (OUT / f"{case}.{t}.llamacpp").write_bytes(raw.tobytes())
                back = gguf.quants.dequantize(raw, q.tensor_type).reshape(rows.shape)
                index["llamacpp_rms"][case][t] = float(np.sqrt(np.mean((back - rows) ** 2)))
                if t != "Q4_K":
                    mine = gguf.quants.quantize(rows, q.tensor_type)
                    diff = int(np.count_nonzero(mine.reshape(-1) != raw.reshape(-1)))
                    index["gguf_package_diff_bytes"][t] = (
                        index["gguf_package_diff_bytes"].get(t, 0) + diff)
    (OUT / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    print(json.dumps(index["gguf_package_diff_bytes"]), "bytes differ (gguf package vs llama.cpp)")


if __name__ == "__main__":
    main()
