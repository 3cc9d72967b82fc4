"""smg 1.13.0 (PyPI) in HTTP mode in front of two llmserve HTTP workers on loopback: answers equal
the workers' own, and smg's load monitor reads our vLLM-named metrics (it detects the workers as
vLLM and shows their running requests and KV usage)."""
import threading
import time

import pytest
import requests

from conftest import free_port, venv_bin
from router_requests import body, text_of

KINDS = [("chat", False), ("chat", True), ("completion", False), ("completion", True)]


def smg_http(start_router, workers, policy="round_robin"):
    port = free_port()
    args = [venv_bin("smg"), "launch", "--host", "127.0.0.1", "--port", str(port),
            "--prometheus-port", str(free_port()), "--policy", policy,
            "--load-monitor-interval", "1", "--worker-urls", *[w.base_url for w in workers]]
    router = start_router(args, port, ready_path="/health")
    # Ready means registered: both workers listed as healthy.
    end = time.time() + 60
    while time.time() < end:
        listed = requests.get(router.url("/workers"), timeout=5).json().get("workers", [])
        if len([w for w in listed if w.get("is_healthy")]) == len(workers):
            return router
        time.sleep(0.5)
    raise AssertionError(f"smg did not register the workers:\n{router.logs()}")


def worker_entry(router, worker):
    for w in requests.get(router.url("/workers"), timeout=5).json()["workers"]:
        if w["url"] == worker.base_url:
            return w
    raise KeyError(worker.base_url)


def engine_load(router, worker):
    """smg's last reading of the worker's load; None before its first poll."""
    load = worker_entry(router, worker).get("engine_load") or {}
    return (load.get("loads") or [None])[0]


@pytest.mark.parametrize("policy", ["round_robin", "cache_aware"])
def test_answers_through_smg_equal_the_workers_own(start_router, workers, model_name, policy):
    router = smg_http(start_router, workers, policy)
    for kind, stream in KINDS:
        direct = text_of(workers[0].base_url, kind, model_name, stream)
        for _ in range(2):
            assert text_of(router.base_url, kind, model_name, stream) == direct, (kind, stream)
    entry = worker_entry(router, workers[0])
    assert entry["runtime_type"] == "vllm" and entry["connection_mode"] == "http"


def test_smg_reads_running_requests_and_kv_usage_from_vllm_metrics(start_router, workers,
                                                                     model_name):
    router = smg_http(start_router, workers)
    busy = workers[1]
    done = threading.Event()

    def long_request():
        b = body("completion", model_name, False, max_tokens=400, ignore_eos=True,
                 prompt="Count slowly: one, two, three,")
        requests.post(busy.url("/v1/completions"), json=b, timeout=300)
        done.set()

    t = threading.Thread(target=long_request)
    t.start()
    seen = None
    end = time.time() + 30
    while time.time() < end and not done.is_set():
        load = engine_load(router, busy)
        if load and load["num_running_reqs"] == 1 and load["token_usage"] > 0:
            seen = load
            break
        time.sleep(0.2)
    usage = busy.scrape().value("vllm:kv_cache_usage_perc", engine="0", model_name=model_name)
    t.join()
    assert seen is not None, "smg never saw the running request in the worker's metrics"
    # smg's figure is a scrape of ours from moments before: same order, 0 < u < 1.
    assert 0 < seen["token_usage"] <= usage + 0.05
    idle = engine_load(router, workers[0])
    assert idle is not None and idle["num_running_reqs"] == 0


def test_the_k8s_manifest_runs_smg_with_flags_and_probes_it_has(start_router, workers):
    """docker/k8s/smg/smg.yaml: every flag is one `smg launch` knows, and the probe paths answer
    200 once smg has its workers."""
    import subprocess

    import yaml
    from conftest import ROOT
    docs = [d for d in yaml.safe_load_all((ROOT / "docker/k8s/smg/smg.yaml").read_text()) if d]
    (dep,) = [d for d in docs if d["kind"] == "Deployment"]
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    assert c["command"][1:] == ["launch"]
    help_text = subprocess.run([venv_bin("smg"), "launch", "--help"], capture_output=True,
                               text=True, timeout=60).stdout
    for flag in [a for a in c["args"] if a.startswith("--")]:
        assert f"{flag} " in help_text or f"{flag}\n" in help_text, flag
    router = smg_http(start_router, workers)
    for probe in ("readinessProbe", "livenessProbe"):
        path = c[probe]["httpGet"]["path"]
        assert requests.get(router.url(path), timeout=5).status_code == 200, path
