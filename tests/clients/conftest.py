"""Fixtures for the third-party client tests: one llmserve daemon (started as in
tests/integration) on the default model, its tokenizer exported as a local Hugging Face folder,
and the helpers to run a client's console script from the venv.

Run by `scripts/test.sh --clients`, which installs tests/requirements-clients.txt into
.venv-clients and tests/requirements-clients-perf.txt into .venv-clients-perf. Nothing here
reaches a hub: HF_HUB_OFFLINE and friends are set for every client.
"""
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "llmserve_integration_conftest", ROOT / "tests" / "integration" / "conftest.py")
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)
Daemon = _base.Daemon
free_port = _base.free_port
serve_available = _base.serve_available
MODEL = _base.MODEL

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DO_NOT_TRACK": "1",
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_TELEMETRY": "False",
    "TOKENIZERS_PARALLELISM": "false",
}
for _k, _v in OFFLINE_ENV.items():
    os.environ.setdefault(_k, _v)

PERF_VENV = Path(os.environ.get("LLMSERVE_CLIENTS_PERF_VENV", ROOT / ".venv-clients-perf"))


def venv_bin(name: str, venv: Path | None = None) -> str:
    """A console script of `venv` (default: the venv running the tests)."""
    bindir = venv / "bin" if venv else Path(sys.executable).parent
    path = bindir / name
    if path.exists():
        return str(path)
    found = None if venv else shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed in {bindir}: scripts/test.sh --clients installs "
                    "tests/requirements-clients*.txt")
    return found


def run_tool(args, timeout, cwd=None, env=None, drop_env=()):
    """Runs a client's command line; fails the test with its output when it exits non-zero."""
    full_env = {k: v for k, v in os.environ.items() if k not in drop_env}
    full_env.update(env or {})
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd or ROOT, env=full_env)
    if proc.returncode != 0:
        pytest.fail(f"{args[0]} exited with {proc.returncode}:\n--- stdout\n"
                    f"{proc.stdout[-6000:]}\n--- stderr\n{proc.stderr[-6000:]}")
    return proc


@pytest.fixture(scope="session")
def daemon():
    why = serve_available()
    if why:
        pytest.skip(why)
    d = Daemon(("--threads", "2"))
    try:
        d.wait_ready()
    except RuntimeError:
        d.stop(signal.SIGKILL)
        raise
    yield d
    d.stop()


@pytest.fixture(scope="session")
def model_id(daemon):
    return requests.get(daemon.url("/v1/models"), timeout=10).json()["data"][0]["id"]


@pytest.fixture(scope="session")
def base_url(daemon):
    return daemon.url("/v1")


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory):
    """The model's tokenizer as a Hugging Face folder (tokenizer.json, tokenizer_config.json),
    exported from the GGUF file and checked against the committed SmolLM2 ids."""
    if not MODEL.exists():
        pytest.skip(f"model {MODEL} is missing (scripts/fetch-model.sh)")
    out = tmp_path_factory.mktemp("tokenizer")
    run_tool([sys.executable, ROOT / "tests" / "reference" / "export_gguf_tokenizer.py",
              "--gguf", MODEL, "--out", out], timeout=300)
    return out


@pytest.fixture(scope="session")
def openai_client(base_url):
    import openai
    return openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=120)


class LiteLLMProxy:
    """`litellm --config` (the LiteLLM proxy, unmodified) with one model, `openai/<ours>` at our
    api_base, on a free port; its log is kept for failure messages."""

    model_name = "llmserve-smol"
    key = "sk-llmserve-test"

    def __init__(self, daemon, model_id, folder: Path):
        self.daemon = daemon
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        config = {
            "model_list": [{"model_name": self.model_name, "litellm_params": {
                "model": f"openai/{model_id}", "api_base": daemon.url("/v1"),
                "api_key": "unused"}}],
            "general_settings": {"master_key": self.key},
            "litellm_settings": {"telemetry": False, "drop_params": False},
        }
        import yaml
        cfg = folder / "litellm.yaml"
        cfg.write_text(yaml.safe_dump(config))
        self.log_path = folder / "litellm.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([venv_bin("litellm"), "--config", str(cfg), "--host",
                                      "127.0.0.1", "--port", str(self.port)],
                                     stdout=self.log, stderr=subprocess.STDOUT, cwd=folder)

    def wait_ready(self, timeout=180):
        import time
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"litellm exited with {self.proc.returncode}:\n{self.logs()}")
            try:
                if requests.get(self.base_url + "/health/liveliness", timeout=2).ok:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"litellm not ready after {timeout} s:\n{self.logs()}")

    def url(self, path: str) -> str:
        return self.base_url + path

    def logs(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-6000:]

    def daemon_route_count(self, route: str) -> float:
        s = self.daemon.scrape()
        return sum(v for (n, labels), v in s.samples.items()
                   if n == "llmserve_http_requests_total" and dict(labels).get("route") == route)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture(scope="session")
def litellm_proxy(daemon, model_id, tmp_path_factory):
    proxy = LiteLLMProxy(daemon, model_id, tmp_path_factory.mktemp("litellm"))
    try:
        proxy.wait_ready()
    except RuntimeError:
        proxy.stop()
        raise
    yield proxy
    proxy.stop()


BIN = _base.BIN
FIGURES = ROOT / "build" / "test-logs" / "clients-figures.txt"


def record_figure(tool: str, ttft_mean: float, ttft_median: float, itl_mean: float,
                  itl_median: float):
    """Appends one benchmark's TTFT and ITL (ms) to build/test-logs/clients-figures.txt."""
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    line = (f"{tool:<22} TTFT mean {ttft_mean:8.1f} median {ttft_median:8.1f}   "
            f"ITL mean {itl_mean:6.1f} median {itl_median:6.1f}  (ms)")
    with open(FIGURES, "a", encoding="utf-8") as f:
        f.write(line + "\n")
    print(line)


def record_line(text: str):
    """Appends a line (an accuracy, an agreement count) to clients-figures.txt."""
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    with open(FIGURES, "a", encoding="utf-8") as f:
        f.write(text + "\n")
    print(text)
