"""The field's serving benchmarks (unmodified, from .venv-clients-perf) against llmserve: AIPerf
and inference-perf run one short synthetic load (64 prompt tokens, 16 generated with
ignore_eos, 16 requests, 2 at a time, /v1/completions streamed) with the exported tokenizer
folder and finish with no errors; `llmserve bench` runs the same load. Their TTFT and ITL go to
build/test-logs/clients-figures.txt side by side (figures, not pass/fail thresholds).
"""
import json

import yaml

from conftest import BIN, PERF_VENV, record_figure, run_tool, venv_bin

REQUESTS, CONCURRENCY, ISL, OSL = 16, 2, 64, 16


def test_aiperf(daemon, model_id, tokenizer_dir, tmp_path):
    out = tmp_path / "aiperf"
    run_tool([venv_bin("aiperf", PERF_VENV), "profile", "--model", model_id,
              "--url", daemon.base_url, "--endpoint-type", "completions", "--streaming",
              "--tokenizer", tokenizer_dir, "--isl", ISL, "--isl-stddev", 0, "--osl", OSL,
              "--osl-stddev", 0, "--extra-inputs", "ignore_eos:true",
              "--request-count", REQUESTS, "--concurrency", CONCURRENCY, "--random-seed", 1,
              "--artifact-dir", out, "--ui", "none", "--no-gpu-telemetry"], timeout=600,
             # AIPerf 0.13 reads any HF_HUB_OFFLINE value (even "0") as offline mode, where it
             # looks a local tokenizer folder up as a hub repo id and fails; the folder is local
             # and nothing is downloaded without it.
             drop_env=("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    report = json.loads((out / "profile_export_aiperf.json").read_text())
    assert report["request_count"]["avg"] == REQUESTS
    assert not report.get("error_request_count") or report["error_request_count"]["avg"] == 0
    assert report["usage_completion_tokens"]["min"] == OSL  # ignore_eos honoured
    ttft, itl = report["time_to_first_token"], report["inter_token_latency"]
    record_figure("AIPerf 0.13.0", ttft["avg"], ttft["p50"], itl["avg"], itl["p50"])


def test_inference_perf(daemon, model_id, tokenizer_dir, tmp_path):
    reports = tmp_path / "reports"
    config = {
        "api": {"type": "completion", "streaming": True},
        "data": {"type": "random",
                 "input_distribution": {"min": ISL, "max": ISL, "mean": ISL, "std_dev": 0,
                                        "type": "fixed"},
                 "output_distribution": {"min": OSL, "max": OSL, "mean": OSL, "std_dev": 0,
                                         "type": "fixed"}},
        "load": {"type": "concurrent", "num_workers": 1,
                 "stages": [{"num_requests": REQUESTS, "concurrency_level": CONCURRENCY}]},
        "server": {"type": "vllm", "model_name": model_id, "base_url": daemon.base_url,
                   "ignore_eos": True},
        "tokenizer": {"pretrained_model_name_or_path": str(tokenizer_dir)},
        "storage": {"local_storage": {"path": str(reports)}},
        "report": {"request_lifecycle": {"summary": True, "per_stage": True,
                                         "per_request": False}},
    }
    cfg = tmp_path / "config.yml"
    cfg.write_text(yaml.safe_dump(config))
    run_tool([venv_bin("inference-perf", PERF_VENV), "--config_file", cfg], timeout=600,
             cwd=tmp_path)
    summary = json.loads((reports / "summary_lifecycle_metrics.json").read_text())
    assert summary["successes"]["count"] == REQUESTS
    assert summary.get("failures", {}).get("count", 0) == 0
    validation = json.loads((reports / "validation.json").read_text())
    assert validation["global"]["errors"] == []
    lat = summary["successes"]["latency"]
    ttft, itl = lat["time_to_first_token"], lat["inter_token_latency"]
    record_figure("inference-perf 0.7.0", ttft["mean"] * 1e3, ttft["median"] * 1e3,
                  itl["mean"] * 1e3, itl["median"] * 1e3)


def test_llmserve_bench_same_load(daemon, model_id, tmp_path):
    out = tmp_path / "bench.json"
    run_tool([BIN, "bench", "--url", daemon.base_url, "--model", model_id,
              "--num-requests", REQUESTS, "--max-concurrency", CONCURRENCY,
              "--input-len", ISL, "--output-len", OSL, "--seed", 1, "--no-progress",
              "--json-out", out], timeout=600)
    report = json.loads(out.read_text())
    assert report["completed"] == REQUESTS and report["failed"] == 0, report["errors"]
    ttft, itl = report["ttft_ms"], report["itl_ms"]
    record_figure("llmserve bench", ttft["mean"], ttft["median"], itl["mean"], itl["median"])
