"""`llmserve perplexity` against llama.cpp's own perplexity of the same GGUF and text
(tests/fixtures/perplexity, made by tests/reference/make_perplexity_fixture.py), the int8 KV cache
against f16, and its errors."""
import json
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, MODEL

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "perplexity" / "smollm2_gpl3_ctx128.json"


def perplexity(text_file, *args):
    if not BIN.exists() or not MODEL.exists():
        pytest.skip("binary or model missing")
    return subprocess.run([str(BIN), "perplexity", "--model", str(MODEL), "--file", str(text_file),
                           *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def oracle():
    return json.loads(FIXTURE.read_text())


@pytest.fixture(scope="module")
def text_file(oracle, tmp_path_factory):
    path = tmp_path_factory.mktemp("ppl") / "gpl3.txt"
    path.write_text(oracle["text"], encoding="utf-8")
    return path


def scored(text_file, ctx, kv):
    r = perplexity(text_file, "--ctx", str(ctx), "--kv-cache-dtype", kv, "--json")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 1, r.stdout  # stdout is the result only; the log goes to stderr
    return json.loads(lines[0])


@pytest.fixture(scope="module")
def f16(oracle, text_file):
    return scored(text_file, oracle["ctx"], "f16")


def test_f16_perplexity_matches_llama_cpp_within_one_percent(oracle, f16):
    ours = f16
    assert ours["windows"] == oracle["windows"]
    assert ours["tokens_scored"] == oracle["tokens_scored"]
    assert abs(ours["ppl"] / oracle["ppl"] - 1) < 0.01, (ours, oracle["ppl"])


def test_int8_kv_perplexity_stays_within_half_a_percent_of_f16(oracle, text_file, f16):
    int8 = scored(text_file, oracle["ctx"], "int8")["ppl"]
    assert abs(int8 / f16["ppl"] - 1) < 0.005, (f16["ppl"], int8)


def test_bad_input_is_a_clear_error(oracle, text_file, tmp_path):
    r = perplexity(text_file, "--ctx", "128", "--kv-cache-dtype", "fp8")
    assert r.returncode == 1 and "fp8 needs the CUDA backend" in r.stderr, r.stderr
    short = tmp_path / "short.txt"
    short.write_text("Too short to score.")
    r = perplexity(short, "--ctx", "128")
    assert r.returncode == 1 and "at least 2 x --ctx = 256" in r.stderr, r.stderr
    r = perplexity(tmp_path / "missing.txt", "--ctx", "128")
    assert r.returncode == 1 and "cannot open" in r.stderr, r.stderr


def test_precision_defaults_as_the_daemon(oracle, text_file, f16):
    """--cpu-matmul-precision by_format (the default) scores the default Q4_1 model as q8x2 does,
    and a K-quant file as q8 does."""
    x2 = perplexity(text_file, "--ctx", str(oracle["ctx"]), "--cpu-matmul-precision", "q8x2", "--json")
    assert x2.returncode == 0, x2.stderr
    assert json.loads(x2.stdout)["ppl"] == f16["ppl"]
    kquant = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_kquant" / "model.gguf"
    ppl = {}
    for setting in ("by_format", "q8", "q8x2"):
        r = subprocess.run([str(BIN), "perplexity", "--model", str(kquant), "--file", str(text_file),
                            "--ctx", "64", "--chunks", "3", "--cpu-matmul-precision", setting,
                            "--json"], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        ppl[setting] = json.loads(r.stdout)["ppl"]
    assert ppl["by_format"] == ppl["q8"] != ppl["q8x2"], ppl
