#!/usr/bin/env python3
"""Diagnostic: writes the default GGUF model dequantized to f32 as an HF safetensors directory
(transformers un-permutes the Q/K rows, so it uses halves RoPE). Running the graph tests with
LLMSERVE_TEST_MODEL=<that dir> checks the graph alone, without activation quantization: it
matched tests/fixtures/logits to 1e-4 with 22/22 identical greedy continuations.

Run: /work/refvenv/bin/python tests/reference/make_f32_model.py [OUT_DIR]  (~540 MB)
"""
import json
import pathlib
import sys

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main():
    torch.set_num_threads(2)
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/smollm2_f32")
    p = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    m = AutoModelForCausalLM.from_pretrained(p.parent, gguf_file=p.name, dtype=torch.float32)
    out.mkdir(parents=True, exist_ok=True)
    sd = {k: v.contiguous().clone() for k, v in m.state_dict().items() if k != "lm_head.weight"}
    save_file(sd, str(out / "model.safetensors"))
    cfg = m.config.to_dict()
    cfg["tie_word_embeddings"] = True
    cfg.pop("quantization_config", None)
    cfg["rope_theta"] = (cfg.get("rope_parameters") or {}).get("rope_theta", cfg.get("rope_theta"))
    (out / "config.json").write_text(json.dumps(cfg, indent=1) + "\n")
    print("wrote", out)


if __name__ == "__main__":
    main()
