#!/usr/bin/env python3
"""A random Gemma 3 vision tower of SigLIP-400M's shape (Gemma 3 4B-27B's: 896 x 896 images,
patch 14 -> 4096 patches, hidden 1152, 27 layers, 16 heads, MLP 4304; the projector pools to 256
soft tokens) for issue 56's encoder benchmark against llama.cpp's mtmd, on the same file.

transformers builds Gemma3ForConditionalGeneration with that vision config (random N(0, 0.02)
weights; speed does not depend on them) and a one-layer text model whose hidden size is the
projector's output (576 by default: SmolLM2-135M's, so llama-mtmd-cli can pair the mmproj with
the default model's GGUF), saves it in f16 with Gemma3ImageProcessor's config, and llama.cpp's
convert_hf_to_gguf.py --mmproj writes OUT/mmproj-siglip400m-f16.gguf from it.

Run: .venv-test/bin/python bench/vision/make_siglip_bench.py [--out bench/vision/out]
     [--text-hidden 576] [--llama-cpp .deps/llama.cpp-0.3.36/src]"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file
from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3TextConfig, SiglipVisionConfig

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "bench" / "vision" / "out"))
    ap.add_argument("--text-hidden", type=int, default=576)
    ap.add_argument("--llama-cpp", default=str(ROOT / ".deps" / "llama.cpp-0.3.36" / "src"))
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(56)
    vision = SiglipVisionConfig(hidden_size=1152, intermediate_size=4304, num_hidden_layers=27,
                                num_attention_heads=16, image_size=896, patch_size=14,
                                hidden_act="gelu_pytorch_tanh", layer_norm_eps=1e-6,
                                vision_use_head=False)
    text = Gemma3TextConfig(vocab_size=1024, hidden_size=a.text_hidden, intermediate_size=64,
                            num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1,
                            head_dim=64)
    cfg = Gemma3Config(text_config=text.to_dict(), vision_config=vision.to_dict(),
                       mm_tokens_per_image=256, image_token_index=1000, boi_token_index=1001,
                       eoi_token_index=1002)
    model = Gemma3ForConditionalGeneration(cfg).to(torch.float16)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
    with tempfile.TemporaryDirectory() as tmp:
        hf = pathlib.Path(tmp) / "hf"
        model.save_pretrained(hf)
        # transformers 5 saves the tower as "vision_tower.*"; the converter maps the Hub's names.
        for f in hf.glob("*.safetensors"):
            t = load_file(str(f))
            save_file({("vision_tower.vision_model." + k[len("vision_tower."):]
                        if k.startswith("vision_tower.") and not k.startswith("vision_tower.vision_model.")
                        else k): v for k, v in t.items()}, str(f), metadata={"format": "pt"})
        index = hf / "model.safetensors.index.json"
        if index.exists():
            j = json.loads(index.read_text())
            j["weight_map"] = {("vision_tower.vision_model." + k[len("vision_tower."):]
                                if k.startswith("vision_tower.") and not k.startswith("vision_tower.vision_model.")
                                else k): v for k, v in j["weight_map"].items()}
            index.write_text(json.dumps(j))
        (hf / "preprocessor_config.json").write_text(json.dumps({
            "image_processor_type": "Gemma3ImageProcessor", "do_resize": True,
            "size": {"height": 896, "width": 896}, "resample": 2, "do_rescale": True,
            "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": [0.5, 0.5, 0.5],
            "image_std": [0.5, 0.5, 0.5], "image_seq_length": 256, "do_pan_and_scan": False}))
        env = dict(os.environ)
        env["PYTHONPATH"] = str(pathlib.Path(a.llama_cpp) / "gguf-py") + os.pathsep + env.get("PYTHONPATH", "")
        dst = out / "mmproj-siglip400m-f16.gguf"
        subprocess.run([sys.executable, str(pathlib.Path(a.llama_cpp) / "convert_hf_to_gguf.py"),
                        str(hf), "--mmproj", "--outtype", "f16", "--outfile", str(dst)],
                       check=True, env=env, stdout=subprocess.DEVNULL)
    print(f"{dst}: {dst.stat().st_size / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
