"""`llmserve generate` takes the engine's configuration as `serve` does: --engine.* flags, the
LLMSERVE_* environment and --config; a bad key is an error naming it (exit 2)."""
import os
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, MODEL

PROMPT = "The capital of France is"


def generate(*args, env=None, check=True):
    if not BIN.exists() or not MODEL.exists():
        pytest.skip("daemon or model missing")
    full_env = dict(os.environ)
    full_env.update(env or {})
    r = subprocess.run([str(BIN), "generate", "--model", str(MODEL), "--prompt", PROMPT,
                        "--max-tokens", "12", "--ignore-eos", *args], capture_output=True,
                       text=True, timeout=300, env=full_env)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def test_engine_flags_env_and_config_file_reach_generate(tmp_path):
    base = generate().stdout
    assert "Paris" in base
    # The AVX2 kernels, an int8 KV cache and q8 activations, each from a different source.
    assert generate("--engine.cpu-isa", "avx2").stdout == base
    f16_logits, int8_logits = tmp_path / "f16.f32", tmp_path / "int8.f32"
    generate("--logits-out", str(f16_logits))
    int8 = generate("--logits-out", str(int8_logits),
                    env={"LLMSERVE_ENGINE_KV_CACHE_DTYPE": "int8"})
    assert "Paris" in int8.stdout
    # int8 pages round keys and values: the logits move (so the setting reached the engine).
    assert f16_logits.read_bytes() != int8_logits.read_bytes()
    cfg = tmp_path / "c.yaml"
    cfg.write_text("engine:\n  cpu_matmul_precision: q8\n  threads: 1\n")
    assert "Paris" in generate("--config", str(cfg)).stdout
    # The chosen values really reach the engine: an invalid one fails, naming its key.
    bad = generate("--engine.kv-cache-dtype", "int4", check=False)
    assert bad.returncode == 2 and "engine.kv_cache_dtype" in bad.stderr
    bad_env = generate(env={"LLMSERVE_ENGINE_CPU_ISA": "mmx"}, check=False)
    assert bad_env.returncode == 2 and "engine.cpu_isa" in bad_env.stderr
    bad_cfg = tmp_path / "bad.yaml"
    bad_cfg.write_text("engine:\n  block_sizes: 16\n")
    r = generate("--config", str(bad_cfg), check=False)
    assert r.returncode == 2 and "block_sizes" in r.stderr


def test_speculation_from_config_runs_through_the_engine():
    # A draft cost of 0 makes every step draft, whatever this machine's measured check cost is
    # (where a check is dear, the measured cost lets the gate draft nothing in 12 tokens).
    r = generate("--speculative.method", "ngram", "--speculative.num-tokens", "3",
                 "--speculative.draft-token-cost", "0")
    assert "Paris" in r.stdout
    assert "speculative:" in r.stderr and "accepted" in r.stderr  # the acceptance stats line
    assert "[info]" not in r.stdout  # the engine's log lines go to stderr: stdout is the text
    measured = generate("--speculative.method", "ngram", "--speculative.num-tokens", "3")
    assert measured.stdout == r.stdout  # speculation never changes the output


def test_matmul_precision_by_format_follows_the_file(tmp_path):
    """The default `by_format`: two-pass activations (q8x2) for the default Q4_1 file, llama.cpp's
    one-pass precision (q8) for a K-quant file; the logits show which kernels ran."""
    assert "matmul activations q8x2" in generate().stderr
    kquant = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_kquant" / "model.gguf"
    logits = {}
    for setting in ("by_format", "q8", "q8x2"):
        out = tmp_path / f"{setting}.f32"
        r = generate("--model", str(kquant), "--logits-out", str(out),
                     "--engine.cpu-matmul-precision", setting)
        expected = "q8x2" if setting == "q8x2" else "q8"
        assert f"matmul activations {expected}" in r.stderr, r.stderr
        logits[setting] = out.read_bytes()
    assert logits["by_format"] == logits["q8"]
    assert logits["by_format"] != logits["q8x2"]
