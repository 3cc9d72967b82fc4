#!/usr/bin/env python3
"""One image through Gemma 3's vision encoder: llmserve against llama.cpp's mtmd on the same
mmproj GGUF, the same image and the same threads (issue 56).

llmserve: build/bench/vision/bench_vision_encoder (decode + preprocess, then the SigLIP tower and
the projector, timed apart). llama.cpp: llama-mtmd-cli with the mmproj and a text GGUF whose
hidden size is the projector's output (the default model, 576), the image given --images times;
its log line "mtmd batch encoding done in N ms" (older builds: "image slice encoded in N ms") is
the tower + projector of one image, the number compared. Rounds alternate the two programs; medians over every encode after the first of
each run (the first carries one-time set-up in both).

    .venv-test/bin/python bench/vision/make_siglip_bench.py
    python3 bench/vision/encoder_vs_mtmd.py --mmproj bench/vision/out/mmproj-siglip400m-f16.gguf \\
        --image .deps/llama.cpp-0.3.36/src/tools/mtmd/test-1.jpeg
"""
import argparse
import json
import re
import statistics
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_llmserve(a):
    out = subprocess.run(["nice", "-n", str(a.nice), str(a.bench), "--mmproj", a.mmproj,
                          "--image", a.image, "--threads", str(a.threads),
                          "--reps", str(a.images)], check=True, capture_output=True, text=True)
    j = json.loads(out.stdout.strip().splitlines()[-1])
    return j["encode_ms"][1:] or j["encode_ms"], j


def run_mtmd(a):
    cmd = ["nice", "-n", str(a.nice), a.mtmd_cli, "-m", a.text_model, "--mmproj", a.mmproj,
           "-t", str(a.threads), "-n", "1", "-p", "Describe the images.", "--temp", "0"]
    cmd += ["--image", ",".join([a.image] * a.images)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    ms = [float(m) for m in re.findall(r"(?:image slice encoded in|mtmd batch encoding done in) (\d+) ms",
                                       out.stdout + out.stderr)]
    if out.returncode != 0 or not ms:
        raise SystemExit(f"llama-mtmd-cli failed ({out.returncode}):\n{(out.stdout + out.stderr)[-3000:]}")
    return ms[1:] or ms


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mmproj", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--text-model", default=str(REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--bench", default=str(REPO / "build" / "bench" / "vision" / "bench_vision_encoder"))
    ap.add_argument("--mtmd-cli", default=str(REPO / ".deps" / "llama.cpp-0.3.36" / "build" / "bin" / "llama-mtmd-cli"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--images", type=int, default=3, help="encodes per run (the first is dropped)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--nice", type=int, default=0)
    ap.add_argument("--md", default="")
    a = ap.parse_args()
    ours, theirs, info = [], [], None
    for r in range(a.rounds):
        o, info = run_llmserve(a)
        print(f"round {r + 1}: llmserve {o} ms", flush=True)
        t = run_mtmd(a)
        print(f"round {r + 1}: llmserve {o} ms, llama.cpp mtmd {t} ms", flush=True)
        ours += o
        theirs += t
    mo, mt = statistics.median(ours), statistics.median(theirs)
    lines = [f"{Path(a.mmproj).name}: {info['image_size']} x {info['image_size']} image, "
             f"{info['patches']} patches, {info['layers']} layers, hidden {info['hidden']}, "
             f"{info['soft_tokens']} soft tokens; {a.threads} threads; {a.rounds} rounds of "
             f"{a.images} encodes each (first dropped); llmserve's decode + preprocess "
             f"{statistics.median(info['preprocess_ms']):.0f} ms (not in the encode).", "",
             "| encoder (tower + projector) | median ms | all ms |", "|---|---|---|",
             f"| llmserve | {mo:.0f} | {', '.join(f'{x:.0f}' for x in ours)} |",
             f"| llama.cpp mtmd | {mt:.0f} | {', '.join(f'{x:.0f}' for x in theirs)} |", "",
             f"llmserve is {mt / mo:.2f}x llama.cpp's speed."]
    print("\n".join(lines))
    if a.md:
        Path(a.md).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
