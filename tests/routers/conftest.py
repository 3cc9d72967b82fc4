"""Fixtures for the router tests: llmserve HTTP workers (started as in tests/integration) behind
the real routers from PyPI (vllm-router, smg), and KV-event subscribers.

Run by `scripts/test.sh --routers`, which installs tests/requirements-routers.txt into its own
venv (.venv-routers). The daemon helpers are those of tests/integration/conftest.py.
"""
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "llmserve_integration_conftest", ROOT / "tests" / "integration" / "conftest.py")
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)
Daemon = _base.Daemon
Scrape = _base.Scrape
free_port = _base.free_port
serve_available = _base.serve_available
MODEL = _base.MODEL

WORKER_ARGS = ("--threads", "1")


def venv_bin(name: str) -> str:
    """A console script of the venv running the tests (vllm-router, smg)."""
    path = Path(sys.executable).parent / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed: scripts/test.sh --routers installs "
                    "tests/requirements-routers.txt")
    return found


class Worker(Daemon):
    """An llmserve daemon publishing KV events on free ports of server.host (127.0.0.1)."""

    def __init__(self, extra_args=(), kv_cache_bytes="64MiB"):
        self.kv_port = free_port()
        self.replay_port = free_port()
        super().__init__((*WORKER_ARGS, "--kv-cache-bytes", kv_cache_bytes,
                          "--kv-events.enabled=true",
                          f"--kv-events.port={self.kv_port}",
                          f"--kv-events.replay-endpoint=tcp://127.0.0.1:{self.replay_port}",
                          *extra_args))
        self.kv_endpoint = f"tcp://127.0.0.1:{self.kv_port}"
        self.replay_endpoint = f"tcp://127.0.0.1:{self.replay_port}"

    def counter(self, route: str) -> float:
        s = self.scrape()
        return sum(v for (n, labels), v in s.samples.items()
                   if n == "llmserve_http_requests_total" and dict(labels).get("route") == route)


def start_daemons(make, n: int):
    """n daemons from make(), all ready (skips when the daemon cannot run here; none is left
    running when one fails to start)."""
    why = serve_available()
    if why:
        pytest.skip(why)
    daemons = [make() for _ in range(n)]
    try:
        for d in daemons:
            d.wait_ready()
    except RuntimeError:
        for d in daemons:
            d.stop(signal.SIGKILL)
        raise
    return daemons


def start_workers(n: int, extra_args=(), kv_cache_bytes="64MiB"):
    return start_daemons(lambda: Worker(extra_args, kv_cache_bytes), n)


@pytest.fixture(scope="module")
def workers():
    ws = start_workers(2)
    yield ws
    for w in ws:
        w.stop()


class Router:
    """A router process on a free port; its log is kept for failure messages."""

    def __init__(self, args, port):
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        self.log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"router-{port}.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, cwd=ROOT)

    def wait_ready(self, path="/health", timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"router exited with {self.proc.returncode}:\n{self.logs()}")
            try:
                if requests.get(self.base_url + path, timeout=2).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.25)
        raise RuntimeError(f"router not ready after {timeout} s:\n{self.logs()}")

    def logs(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-6000:]

    def url(self, path: str) -> str:
        return self.base_url + path

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture
def start_router():
    started = []

    def start(args, port, ready_path="/health"):
        r = Router(args, port)
        started.append(r)
        try:
            return r.wait_ready(ready_path)
        except RuntimeError:
            r.stop()
            raise

    yield start
    for r in started:
        r.stop()


@pytest.fixture(scope="module")
def model_name(workers):
    return requests.get(workers[0].url("/v1/models"), timeout=10).json()["data"][0]["id"]
