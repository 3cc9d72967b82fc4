"""smg (the SGLang Model Gateway, PyPI `smg`) as a gRPC router in front of llmserve daemons:
launched on a free port in its own process group, ready once it answers a chat request."""
import os
import signal
import subprocess
import time
from pathlib import Path

import requests
from conftest import free_port, venv_bin

START_TIMEOUT_S = 240


class Smg:
    """`workers`: daemons whose gRPC ports smg fronts (grpc://host:port)."""

    def __init__(self, workers, policy="round_robin", log_level="info"):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"smg-{self.port}.log"
        self.log = open(self.log_path, "w")
        args = [venv_bin("smg"), "launch", "--host", "127.0.0.1", "--port", str(self.port),
                "--worker-urls", *[f"grpc://{w.grpc_target}" for w in workers],
                "--policy", policy, "--log-level", log_level,
                "--prometheus-port", str(free_port()),
                "--worker-startup-check-interval", "1"]
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def logs(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-6000:]

    def wait_ready(self, model, timeout=START_TIMEOUT_S, path="/v1/chat/completions", body=None):
        """Ready once `path` answers 200 to `body` (default: a one-token chat request)."""
        end = time.time() + timeout
        body = body or {"model": model, "messages": [{"role": "user", "content": "hi"}],
                        "max_tokens": 1, "temperature": 0}
        last = ""
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"smg exited with {self.proc.returncode}:\n{self.logs()}")
            try:
                r = requests.post(self.url + path, json=body, timeout=30)
                if r.status_code == 200:
                    return self
                last = f"{r.status_code} {r.text[:300]}"
            except requests.RequestException as e:
                last = str(e)
            time.sleep(1)
        raise RuntimeError(f"smg not serving after {timeout} s ({last}):\n{self.logs()}")

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()
