"""engine.cpu_isa end to end: a daemon forced to the AVX2 kernels serves the same greedy text as
one on the widest ISA (AVX-512 on this host), over HTTP and with logprobs; an unknown ISA is a
start-up error naming the key. (Logits agree to float rounding in attention, not bit for bit:
tests/unit/graph's unit_graph_model_avx2 run and docs/KERNELS.md.)"""
import subprocess

import pytest
import requests

from conftest import BIN, MODEL

PROMPTS = ["The capital of France is", "def fibonacci(n):", "List three colours:"]


def completions(d):
    out = []
    for p in PROMPTS:
        r = requests.post(d.url("/v1/completions"), timeout=120,
                          json={"prompt": p, "max_tokens": 24, "temperature": 0, "logprobs": 1,
                                "ignore_eos": True})
        assert r.status_code == 200, r.text
        c = r.json()["choices"][0]
        out.append((c["text"], c["logprobs"]["token_logprobs"]))
    return out


def test_avx2_daemon_serves_the_same_greedy_text(start_daemon):
    avx2 = start_daemon("--engine.cpu-isa", "avx2")
    assert "CPU kernels avx2" in avx2.logs()
    wide = start_daemon()
    if " avx512f " in open("/proc/cpuinfo").read():
        assert "CPU kernels avx512" in wide.logs()
    a, w = completions(avx2), completions(wide)
    for (ta, la), (tw, lw), p in zip(a, w, PROMPTS):
        assert ta == tw, (p, ta, tw)
        assert max(abs(x - y) for x, y in zip(la, lw)) < 0.02, (p, la, lw)


def test_unknown_isa_is_a_startup_error_naming_the_key():
    if not BIN.exists() or not MODEL.exists():
        pytest.skip("daemon or model missing")
    r = subprocess.run([str(BIN), "serve", "--model", str(MODEL), "--engine.cpu-isa", "sse2"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "engine.cpu_isa" in r.stderr + r.stdout
