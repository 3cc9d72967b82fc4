"""Fixtures that start `build/llmserve serve` with the default model on free ports.

The whole session is skipped cleanly when the binary has no `serve` subcommand yet or the model
file is missing. Override the binary with LLMSERVE_BIN and the model with LLMSERVE_TEST_MODEL.
"""
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("LLMSERVE_BIN", ROOT / "build" / "llmserve"))
MODEL = Path(os.environ.get("LLMSERVE_TEST_MODEL",
                            ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"))
START_TIMEOUT_S = float(os.environ.get("LLMSERVE_START_TIMEOUT", "180"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_available() -> str:
    """Empty when the daemon can run here, else why not."""
    if not BIN.exists():
        return f"{BIN} is not built"
    if not MODEL.exists():
        return f"model {MODEL} is missing (scripts/fetch-model.sh)"
    try:
        out = subprocess.run([str(BIN), "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{BIN} does not run: {e}"
    if "serve" not in out.stdout + out.stderr:
        return f"{BIN} has no `serve` subcommand yet"
    return ""


class Scrape:
    """One /metrics page, parsed with prometheus_client: samples by name and label set."""

    def __init__(self, text: str):
        from prometheus_client.parser import text_string_to_metric_families
        self.text = text
        self.samples = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                self.samples[(s.name, frozenset(s.labels.items()))] = s.value

    def has(self, name: str, **labels) -> bool:
        return (name, frozenset(labels.items())) in self.samples

    def value(self, name: str, **labels) -> float:
        """The sample with exactly these labels; KeyError when the series is not exported."""
        return self.samples[(name, frozenset(labels.items()))]

    def total(self, name: str) -> float:
        """The sum over every label set of `name`."""
        return sum(v for (n, _), v in self.samples.items() if n == name)

    def rose(self, before: "Scrape", name: str, **labels) -> float:
        """How much a series grew since `before`; one that `before` lacked counts from 0 (a
        counter whose label set appears with its first event)."""
        key = (name, frozenset(labels.items()))
        return self.value(name, **labels) - before.samples.get(key, 0.0)


class Daemon:
    def __init__(self, extra_args=(), env=None, model=None):
        self.http_port = free_port()
        self.grpc_port = free_port()
        while self.grpc_port == self.http_port:
            self.grpc_port = free_port()
        self.base_url = f"http://127.0.0.1:{self.http_port}"
        self.grpc_target = f"127.0.0.1:{self.grpc_port}"
        args = [str(BIN), "serve", "--model", str(model or MODEL), "--host", "127.0.0.1",
                "--http-port", str(self.http_port), "--grpc-port", str(self.grpc_port),
                *extra_args]
        self.log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"llmserve-{self.http_port}.log"
        self.log = open(self.log_path, "w")
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=full_env,
                                     cwd=ROOT)
        self.headers = {}

    def wait_ready(self, timeout=START_TIMEOUT_S):
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llmserve exited with {self.proc.returncode}:\n{self.logs()}")
            try:
                if requests.get(self.base_url + "/ready", timeout=2).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.25)
        raise RuntimeError(f"llmserve not ready after {timeout} s:\n{self.logs()}")

    def logs(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-5000:]

    def url(self, path: str) -> str:
        return self.base_url + path

    def metric(self, name: str, headers=None) -> float:
        text = requests.get(self.url("/metrics"), headers=headers or self.headers, timeout=10).text
        for line in text.splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
        raise KeyError(name)

    def scrape(self, headers=None) -> Scrape:
        r = requests.get(self.url("/metrics"), headers=headers or self.headers, timeout=10)
        r.raise_for_status()
        return Scrape(r.text)

    def wait_metric(self, name: str, want, timeout=30, **labels) -> float:
        """The sample once it equals `want` (or `want(value)` holds, for a callable). /metrics is
        the snapshot the engine publishes after each step, and a response can reach the client
        before its step has published; AssertionError with the last value after `timeout` s."""
        ok = want if callable(want) else (lambda v: v == want)
        end = time.time() + timeout
        while True:
            got = self.scrape().value(name, **labels)
            if ok(got):
                return got
            if time.time() >= end:
                raise AssertionError(f"{name}{labels or ''} is {got}, not {want}, after {timeout} s")
            time.sleep(0.05)

    def stop(self, sig=signal.SIGTERM, timeout=60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


@pytest.fixture(scope="session")
def daemon():
    why = serve_available()
    if why:
        pytest.skip(why)
    d = Daemon()
    try:
        d.wait_ready()
    except RuntimeError:
        d.stop(signal.SIGKILL)
        raise
    yield d
    d.stop()


@pytest.fixture
def start_daemon():
    """Starts extra daemons with their own flags; stops them after the test."""
    why = serve_available()
    if why:
        pytest.skip(why)
    started = []

    def start(*extra_args, env=None, model=None):
        d = Daemon(extra_args, env, model)
        started.append(d)
        return d.wait_ready()

    yield start
    for d in started:
        d.stop(signal.SIGKILL)


@pytest.fixture(scope="session")
def model_id(daemon):
    return requests.get(daemon.url("/v1/models"), timeout=10).json()["data"][0]["id"]


@pytest.fixture(scope="session")
def client(daemon):
    openai = pytest.importorskip("openai")
    return openai.OpenAI(base_url=daemon.url("/v1"), api_key="unused", max_retries=0, timeout=120)
