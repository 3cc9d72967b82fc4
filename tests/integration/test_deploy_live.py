"""Deployment against a live daemon (conftest.py): probes answer 200 and every metric the dashboard
and the autoscaling example query is in a live scrape."""
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from deploy_support import *  # noqa: F401,F403  (shared parsers and sources of truth)

# =============================================================================================
# Against a live daemon


def scrape_families(text: str) -> tuple:
    families, histograms = set(), set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(maxsplit=3)
            families.add(name)
            if kind.strip() in ("histogram", "summary"):
                histograms.add(name)
        elif line and not line.startswith("#"):
            families.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return families, histograms


def test_live_metrics_cover_dashboard_and_autoscaling(daemon):
    r = requests.post(daemon.url("/v1/completions"), json={"prompt": "Hello", "max_tokens": 4},
                      headers=daemon.headers, timeout=120)
    assert r.status_code == 200, r.text
    text = requests.get(daemon.url("/metrics"), headers=daemon.headers, timeout=10).text
    families, histograms = scrape_families(text)
    names = metric_names(dashboard_queries() + autoscaling_queries())
    assert not missing_metrics(names, families, histograms), "queried but not in /metrics"


def test_live_probe_and_healthcheck_paths(daemon):
    paths = {deployment_container()[p]["httpGet"]["path"]
             for p in ("livenessProbe", "readinessProbe", "startupProbe")}
    paths.add("/health")  # the Dockerfiles' HEALTHCHECK
    for path in sorted(paths):
        assert requests.get(daemon.url(path), timeout=10).status_code == 200, path


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_live_container_start_path(tmp_path):
    """The image's start: entrypoint.sh -> llmserve serve with the Deployment's environment and
    the ConfigMap's file; the probes answer, and SIGTERM exits 0 within the pod's grace period."""
    why = serve_available()
    if why:
        pytest.skip(why)
    opt = image_tree(tmp_path, llmserve=str(BIN.resolve()))
    conf = tmp_path / "config.yaml"
    conf.write_text(k8s_docs()["ConfigMap"]["data"]["config.yaml"])
    http_port, grpc_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLMSERVE_")}
    env.update(deployment_env())
    env.update({"LLMSERVE_CONFIG": str(conf), "LLMSERVE_SERVER_HOST": "127.0.0.1",
                "LLMSERVE_SERVER_HTTP_PORT": str(http_port),
                "LLMSERVE_SERVER_GRPC_PORT": str(grpc_port),
                "LLMSERVE_MODEL_PATH": str(MODEL), "LLMSERVE_MODEL_FETCH": "0",
                "LLMSERVE_ENGINE_DEVICE": "auto"})
    log = open(tmp_path / "llmserve.log", "w")
    proc = subprocess.Popen([str(opt / "bin" / "entrypoint.sh")], env=env, cwd=tmp_path,
                            stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{http_port}"
    try:
        end = time.time() + float(os.environ.get("LLMSERVE_START_TIMEOUT", "180"))
        while True:
            assert proc.poll() is None, (tmp_path / "llmserve.log").read_text()[-3000:]
            try:
                if requests.get(base + "/ready", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.time() < end, "not ready in time"
            time.sleep(0.25)
        c = deployment_container()
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            path = c[probe]["httpGet"]["path"]
            assert requests.get(base + path, timeout=10).status_code == 200, probe
        grace = k8s_docs()["Deployment"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=grace) == 0
        assert _port_free(http_port)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
