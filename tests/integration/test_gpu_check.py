"""scripts/gpu-check.sh without a GPU: it fails fast and says why; and its Python parts (report
parsing, the daemon check's parsers, the torch benchmark's shape handling) on canned input."""
import importlib.util
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu-check.sh"


def load(path):
    spec = importlib.util.spec_from_file_location(Path(path).stem, ROOT / path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


report = load("scripts/gpu_check/report.py")
daemon = load("scripts/gpu_check/daemon_check.py")
sdpa = load("bench/cuda/torch_attention_bench.py")
oracle = load("tests/reference/gpu_oracle.py")


def run_check(tmp_path, path_dirs, bundle):
    env = {"PATH": ":".join(path_dirs), "HOME": str(tmp_path), "OUT": str(tmp_path / "out")}
    t0 = time.time()
    p = subprocess.run(["bash", str(SCRIPT), "run", str(bundle)], capture_output=True, text=True,
                       env=env, timeout=60, cwd=ROOT)
    return p, time.time() - t0


def test_fails_fast_without_nvidia_smi(tmp_path):
    if Path("/usr/bin/nvidia-smi").exists() or Path("/bin/nvidia-smi").exists():
        pytest.skip("this machine has nvidia-smi")
    p, secs = run_check(tmp_path, ["/usr/bin", "/bin"], tmp_path / "nobundle")
    assert p.returncode != 0
    assert secs < 10
    assert "no GPU: nvidia-smi is not on PATH" in p.stderr
    assert "FAILED" in (tmp_path / "out" / "gpu-report.md").read_text()


def test_fails_fast_when_nvidia_smi_fails_or_there_is_no_bundle(tmp_path):
    fake = tmp_path / "fakebin"
    fake.mkdir()
    smi = fake / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate "
                   "with the NVIDIA driver.'\nexit 9\n")
    smi.chmod(0o755)
    p, secs = run_check(tmp_path, [str(fake), "/usr/bin", "/bin"], tmp_path / "nobundle")
    assert p.returncode != 0 and secs < 10
    assert "no GPU: nvidia-smi failed" in p.stderr
    smi.write_text("#!/bin/sh\necho 'NVIDIA H200, 580.159.03, 143771 MiB, 345 MHz, 3201 MHz, "
                   "30, 70 W'\n")
    p, secs = run_check(tmp_path, [str(fake), "/usr/bin", "/bin"], tmp_path / "nobundle")
    assert p.returncode != 0 and secs < 10
    assert "no bundle at" in p.stderr


GTEST_LOG = """\
[==========] Running 4 tests from 2 test suites.
[ RUN      ] CudaOpsNoDevice.CreateFailsCleanlyWithoutDevice
tests/unit/cuda/cuda_ops_test.cpp:46: Skipped
a CUDA device is present

[  SKIPPED ] CudaOpsNoDevice.CreateFailsCleanlyWithoutDevice (0 ms)
[ RUN      ] Kernels.RmsNorm
[       OK ] Kernels.RmsNorm (3 ms)
[ RUN      ] HfOracle.Smollm2ShapeCudaGraphs
tests/unit/cuda/hf_oracle_test.cpp:201: Skipped
LLMSERVE_GPU_ORACLE_DIR is not set (scripts/gpu-check.sh sets it)

[  SKIPPED ] HfOracle.Smollm2ShapeCudaGraphs (0 ms)
[ RUN      ] Kernels.Decode
x.cpp:9: Failure
KERNEL MISMATCH decode: 3 of 10 elements out of tolerance
[  FAILED  ] Kernels.Decode (5 ms)
[==========] 4 tests from 2 test suites ran. (9 ms total)
[  PASSED  ] 1 test.
[  SKIPPED ] 2 tests, listed below:
[  SKIPPED ] CudaOpsNoDevice.CreateFailsCleanlyWithoutDevice
[  SKIPPED ] HfOracle.Smollm2ShapeCudaGraphs
[  FAILED  ] 1 test, listed below:
[  FAILED  ] Kernels.Decode
"""


def test_gtest_parsing_and_verdict():
    p = report.parse_gtest(GTEST_LOG)
    assert p["passed"] == 1 and p["ran"] == 4 and not p["crashed"]
    assert p["failed"] == ["Kernels.Decode"]
    assert [n for n, _ in report.unexpected_skips(p)] == ["HfOracle.Smollm2ShapeCudaGraphs"]
    ok, why = report.gtest_verdict(GTEST_LOG)
    assert not ok and "Kernels.Decode" in why
    no_fail = GTEST_LOG.replace("[  FAILED  ] Kernels.Decode (5 ms)", "[       OK ] Kernels.Decode")
    ok, why = report.gtest_verdict(no_fail)
    assert not ok and "HfOracle.Smollm2ShapeCudaGraphs" in why and "skipped" in why
    only_expected = no_fail.replace("LLMSERVE_GPU_ORACLE_DIR is not set", "a CUDA device is present")
    ok, why = report.gtest_verdict(only_expected)
    assert ok, why
    crashed = "\n".join(GTEST_LOG.splitlines()[:8])  # died inside Kernels.RmsNorm's successor
    ok, why = report.gtest_verdict(crashed)
    assert not ok and "did not finish" in why


def test_report_build(tmp_path):
    (tmp_path / "stages.tsv").write_text("probe\t0\t2\t[ gpu ] H200\nbench\t124\t240\t\n"
                                         "sdpa\t200\t0\t\n")
    (tmp_path / "meta.json").write_text(json.dumps({"date": "today", "gpu": "NVIDIA H200",
                                                    "total_seconds": 300, "budget_seconds": 440}))
    (tmp_path / "unit-tests.txt").write_text(GTEST_LOG)
    model = {"kernel": "model_decode", "preset": "llama-3.1-8b", "batch": 1, "ctx": 512,
             "graphs": True, "ms": 4.0, "gpu_ms": 3.8, "tok_s": 250.0, "weight_gb": 16.06,
             "floor_ms": 3.6, "floor_ratio": 0.9, "bytes_floor_ms": 3.62, "gap_us_median": 150.0,
             "gap_us_p90": 260.0, "graphs_captured": 1}
    (tmp_path / "bench.txt").write_text(
        "## GPU: NVIDIA H200 (sm_90, 139.8 GiB)\n\nDevice-to-device copy: 4300 GB/s\n"
        "| kernel | launch | ms | figure |\nBENCH " + json.dumps(model) + "\nBENCH " +
        json.dumps({**model, "preset": "llama-3.1-8b-fp8", "tok_s": 400.0, "ms": 2.5}) +
        "\nBENCH {bad\n")
    oracle_line = {"model": "hd128-gqa4", "backend": "cuda", "graphs": True, "rows": 100,
                   "bad_rows": 0, "median_rel_l2": 0.004, "worst_rel_l2": 0.01,
                   "worst_where": "prompt 4 position 599 (step 1)",
                   "worst_max_abs_over_std": 0.05, "greedy_equal": 150, "near_ties": 10,
                   "mismatches": 0, "free_run": [32, 7, 3, 32, 12], "tolerance_rel_l2": 0.025,
                   "seconds": 3.2}
    (tmp_path / "oracle-test.txt").write_text("ORACLE " + json.dumps(oracle_line) + "\n")
    (tmp_path / "daemon.json").write_text(json.dumps(
        {"checks": [{"name": "ready", "ok": True, "detail": "after 9 s"},
                    {"name": "streaming chat", "ok": False, "detail": "empty | text"}]}))
    (tmp_path / "sdpa.json").write_text(json.dumps(
        {"copy_gbs": 4200, "our_copy_gbs": 4300, "matmul_tflops": 780, "rows": [
            {"kernel": "decode_attention", "batch": 64, "ctx": 4096, "head_dim": 128,
             "ours_figure": 3600.0, "ratio": 1.05},
            {"kernel": "prefill_attention", "batch": 1, "ctx": 4096, "head_dim": 128,
             "ours_figure": 250.0, "ratio": 0.7}]}))
    md, summary = report.build(str(tmp_path))
    assert "| bench | **TIMED OUT** | 240 |" in md
    assert "| sdpa | **not run** (time budget) | 0 |" in md
    assert "**FAILED** (failed: bench, sdpa)" in md
    assert "| hd128-gqa4 | cuda | yes | 100 (0) |" in md
    assert "empty \\| text" in md
    assert "| 1 | yes | 4.000 | 3.800 | 250 | 90% |" in md
    met = {t["target"]: t["met"] for t in summary["targets"]}

    def met_of(prefix):
        return [v for k, v in met.items() if k.startswith(prefix)]
    assert met_of("batch-1 decode of the 8B-shaped model >=") == [True]
    assert met_of("batch-1 decode of the 8B-shaped model with FP8") == [True]  # 400 >= 380
    assert "### The same model with FP8 e4m3 weights" in md
    assert summary["figures"] == {"decode_b1_bf16_tok_s": 250.0, "decode_b1_fp8_tok_s": 400.0}
    assert met_of("CPU gap between decode steps") == [True]
    assert met_of("decode attention >= 80% of HBM") == [True]  # 3600 >= 0.8 x 4300
    assert met_of("decode attention >= 0.9x torch") == [True, None]  # 1 x 32k not measured
    assert met_of("prefill attention") == [False, False]  # 250 < 0.4 x 780; 0.7x torch
    assert not summary["passed"] and summary["failed_stages"] == ["bench", "sdpa"]


def test_daemon_check_parsers():
    m = daemon.parse_metrics('# HELP x\nllmserve_http_requests_total{route="/v1/completions",'
                             'code="200"} 3\nllmserve_http_requests_total{route="/v1/models",'
                             'code="200"} 1\nllmserve_generation_tokens_total 48\n')
    assert daemon.metric_sum(m, "llmserve_http_requests_total") == 4
    assert daemon.metric_sum(m, "llmserve_http_requests_total", route="/v1/completions") == 3
    assert daemon.metric_sum(m, "llmserve_generation_tokens_total") == 48
    events = [{"choices": [{"text": "Hel", "finish_reason": None}]},
              {"choices": [{"text": "lo", "finish_reason": "length"}]},
              {"choices": [], "usage": {"completion_tokens": daemon.MAX_TOKENS}}]
    ok, detail = daemon.check_stream(events, True, "completion")
    assert ok, detail
    assert not daemon.check_stream(events, False, "completion")[0]  # no [DONE]
    chat = [{"choices": [{"delta": {"role": "assistant"}, "finish_reason": None}]},
            {"choices": [{"delta": {"content": ""}, "finish_reason": "length"}]}]
    assert not daemon.check_stream(chat, True, "chat")[0]  # empty text


def test_torch_bench_shapes_without_torch():
    text = ('BENCH {"kernel": "decode_attention", "batch": 64, "ctx": 4096, "heads": 32, '
            '"kv_heads": 8, "head_dim": 128, "ms": 0.3, "gbs": 3500}\n'
            'BENCH {"kernel": "prefill_attention", "batch": 1, "q_len": 4096, "heads": 32, '
            '"kv_heads": 8, "head_dim": 128, "ms": 0.9, "tflops": 300}\n'
            'BENCH {"kernel": "model_decode", "batch": 1}\nDevice-to-device copy: 4321 GB/s\n')
    shapes = sdpa.attention_shapes(sdpa.bench_lines(text))
    assert [s["kernel"] for s in shapes] == ["decode_attention", "prefill_attention"]
    assert sdpa.decode_bytes(shapes[0]) == 2 * 64 * 8 * 4096 * 128 * 2
    assert sdpa.prefill_flops(shapes[1]) == 4 * 32 * 128 * 4096 * 4096 / 2
    assert sdpa.our_copy_gbs(text) == 4321
    assert len(sdpa.attention_shapes([])) == len(sdpa.DEFAULT_SHAPES)


def test_oracle_script_basics(tmp_path):
    assert oracle.top2([0.5, 2.0, 1.5, -1.0]) == (1, 0.5)
    cfg = oracle.hf_config(oracle.model_spec("hd128-gqa4", tiny=False))
    assert cfg["head_dim"] == 128 and cfg["num_attention_heads"] // cfg["num_key_value_heads"] == 4
    assert cfg["rope_parameters"]["rope_theta"] == cfg["rope_theta"] == 500000.0
    smol = oracle.hf_config(oracle.model_spec("smollm2-135m-shape", tiny=False))
    assert (smol["hidden_size"], smol["num_hidden_layers"], smol["vocab_size"]) == (576, 30, 49152)
    assert smol["tie_word_embeddings"]
    prompts = oracle.prompts_for(oracle.MODELS["hd128-gqa4"], oracle.PROMPT_LENS, 1)
    assert [len(p) for p in prompts] == oracle.PROMPT_LENS
    assert min(min(p) for p in prompts) >= oracle.FIRST_ID


def test_oracle_safetensors_writer(tmp_path):
    np = pytest.importorskip("numpy")
    spec = oracle.model_spec("hd128-gqa4", tiny=True)
    w = {"model.embed_tokens.weight": np.ones((spec["vocab"], spec["hidden"]), np.float32),
         "model.layers.0.self_attn.k_proj.weight":
             np.full((spec["kv_heads"] * spec["head_dim"], spec["hidden"]), -2.5, np.float32),
         "lm_head.weight": np.zeros((spec["vocab"], spec["hidden"]), np.float32)}
    oracle.write_bf16_safetensors(tmp_path / "model.safetensors", w)
    (tmp_path / "config.json").write_text(json.dumps(oracle.hf_config(spec)))
    assert oracle.check_saved(str(tmp_path), spec) == 3
    head = oracle.safetensors_header(tmp_path / "model.safetensors")
    assert head["model.layers.0.self_attn.k_proj.weight"]["dtype"] == "BF16"


def test_bash_syntax():
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0
    assert os.access(SCRIPT, os.X_OK)


def test_spec_identity_stage_on_the_cpu(tmp_path):
    """The stage's script as the GPU check runs it, here on the CPU backend: speculation on and
    off, batched and alone, give the same token ids (and drafts are accepted)."""
    from conftest import BIN, MODEL
    if not BIN.exists() or not MODEL.exists():
        pytest.skip("binary or model missing")
    p = subprocess.run(["python3", str(ROOT / "scripts" / "gpu_check" / "spec_identity.py"),
                        "--llmserve", str(BIN), "--model", str(MODEL), "--device", "cpu",
                        "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    result = json.loads((tmp_path / "spec_identity.json").read_text())
    n = result["prompts"]
    assert n == 16 and result["spec_identical"] == n and result["batch_identical"] == n
    assert result["accepted_tokens"] > 0 and not result["mismatches"]
    assert f"SPEC identical {n}/{n}" in p.stdout
