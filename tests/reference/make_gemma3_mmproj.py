#!/usr/bin/env python3
"""llama.cpp's mmproj GGUF of the tiny Gemma 3 vision fixture (tests/fixtures/tiny_gemma3_vision,
made by make_tiny_gemma3_vision.py), written by llama.cpp's own converter:
convert_hf_to_gguf.py --mmproj --outtype f32 -> tests/fixtures/tiny_gemma3_vision/mmproj-f32.gguf
(from a copy whose tower tensors carry the Hub's "vision_tower.vision_model." names).
The tests load it and compare the tower's and projector's outputs with what transformers computed
for the same pixels (the fixture's vision_hidden.f32 and image_features.f32): the converter is the
independent writer, transformers the oracle.

Run: .venv-test/bin/python tests/reference/make_gemma3_mmproj.py [--llama-cpp SRC]
     (SRC default .deps/llama.cpp-0.3.36/src, the llama-cpp-python sdist's llama.cpp; the venv
     needs torch, numpy, safetensors and sentencepiece for the converter)"""
import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

from safetensors.numpy import load_file, save_file

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "tiny_gemma3_vision"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-cpp", default=str(ROOT / ".deps" / "llama.cpp-0.3.36" / "src"))
    args = ap.parse_args()
    src = pathlib.Path(args.llama_cpp)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(src / "gguf-py") + os.pathsep + env.get("PYTHONPATH", "")
    out = FIXTURE / "mmproj-f32.gguf"
    with tempfile.TemporaryDirectory() as tmp:
        # transformers 5 saved the tower as "vision_tower.*"; the converter maps the Hub's
        # transformers 4 names ("vision_tower.vision_model.*"), so a copy is renamed.
        hf = pathlib.Path(tmp) / "hf"
        shutil.copytree(FIXTURE, hf, ignore=shutil.ignore_patterns("*.gguf", "images", "*.f32"))
        tensors = load_file(str(FIXTURE / "model.safetensors"))
        renamed = {("vision_tower.vision_model." + k[len("vision_tower."):]
                    if k.startswith("vision_tower.") else k): v for k, v in tensors.items()}
        save_file(renamed, str(hf / "model.safetensors"))
        subprocess.run([sys.executable, str(src / "convert_hf_to_gguf.py"), str(hf), "--mmproj",
                        "--outtype", "f32", "--outfile", str(out)], check=True, env=env)
    print(f"{out}: {out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
