#!/usr/bin/env python3
"""Rewrites a GGUF with every tensor dequantized: 2-D weights in --type (f16 default, bf16 or f32),
vectors in F32, every metadata key copied (general.file_type set to match). The `gguf` PyPI
package does the dequantization, so a Q4_1 model becomes an F16 one whose weights are exactly the
Q4_1 file's values (a Q4_1 value d * q + m with f16 d, m rounds to f16 with at most one rounding,
and these models' values fit f16's range).

Used for model.quantize (issue 36): an F16 reference of the default model for `llmserve
perplexity`, and the tiny F16 GGUF of tests/integration/test_load_quantize.py.

  .venv-bench/bin/python tests/reference/gguf_to_float.py \\
      models/SmolLM2-135M-Instruct.Q4_1.gguf /tmp/SmolLM2-135M-Instruct.F16.gguf
"""
import argparse
import sys

import numpy as np

try:
    import gguf
except ImportError:  # pragma: no cover
    sys.exit("gguf_to_float: needs the PyPI gguf package (.venv-bench)")

QT = gguf.GGMLQuantizationType
TYPES = {"f16": (QT.F16, gguf.LlamaFileType.MOSTLY_F16),
         "bf16": (QT.BF16, gguf.LlamaFileType.MOSTLY_BF16),
         "f32": (QT.F32, gguf.LlamaFileType.ALL_F32)}
SKIP = {"general.file_type", "general.quantization_version", "GGUF.version", "GGUF.tensor_count",
        "GGUF.kv_count", "general.architecture"}


def to_bf16_bits(x):
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def open_writer(out, reader, file_type):
    """A GGUFWriter with the reader's architecture and metadata, general.file_type replaced."""
    arch = reader.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(str(out), arch)
    for key, f in reader.fields.items():
        if key in SKIP:
            continue
        vtype = f.types[0]
        sub = f.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(key, f.contents(), vtype, sub)
    w.add_file_type(int(file_type))
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    return w


def write_tensors(w, tensors):
    """tensors: [(name, float32 array in row-major numpy shape, target QT)]."""
    for name, arr, qt in tensors:
        if qt == QT.BF16:
            w.add_tensor(name, to_bf16_bits(arr), raw_shape=arr.shape, raw_dtype=QT.BF16)
        elif qt == QT.F16:
            w.add_tensor(name, arr.astype(np.float16))
        else:
            w.add_tensor(name, arr.astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def dequantized(reader):
    """[(name, float32 array)] in file order."""
    out = []
    for t in reader.tensors:
        ne = [int(x) for x in t.shape]
        arr = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        out.append((t.name, arr.reshape(list(reversed(ne)))))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--type", choices=sorted(TYPES), default="f16")
    args = ap.parse_args()
    reader = gguf.GGUFReader(args.src)
    qt, ft = TYPES[args.type]
    w = open_writer(args.out, reader, ft)
    write_tensors(w, [(n, a, qt if a.ndim == 2 else QT.F32) for n, a in dequantized(reader)])
    print(f"wrote {args.out}: {len(reader.tensors)} tensors, 2-D weights {args.type.upper()}")


if __name__ == "__main__":
    main()
