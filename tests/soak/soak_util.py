"""Shared pieces of the soak tests: the daemon launcher of tests/integration (reused, not copied),
short / long mode, asyncio HTTP and gRPC clients, /metrics and RSS readers.

Long mode: LLMSERVE_SOAK=long (bigger storms, 30-minute abort storm); the default is the short
mode scripts/test.sh runs.
"""
import asyncio
import importlib.util
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LONG = os.environ.get("LLMSERVE_SOAK", "short") == "long"


def _load_integration_conftest():
    spec = importlib.util.spec_from_file_location(
        "llmserve_integration_conftest", ROOT / "tests" / "integration" / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_it = _load_integration_conftest()
Daemon = _it.Daemon
serve_available = _it.serve_available
BIN = _it.BIN
MODEL = _it.MODEL
# The daemon with the test-only fault switches linked in (tests/fault/, built beside llmserve).
FAULT_BIN = Path(os.environ.get("LLMSERVE_FAULT_BIN", BIN.parent / "llmserve-fault"))


def parse_metrics(text):
    """{name or name{labels}: value} of a Prometheus text page."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        try:
            out[key] = float(value)
        except ValueError:
            pass
    return out


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


async def metrics(client, daemon):
    r = await client.get(daemon.url("/metrics"), timeout=10)
    r.raise_for_status()
    return parse_metrics(r.text)


async def wait_idle(client, daemon, timeout=60):
    """Waits until nothing runs or waits and every KV block is free; returns the last metrics."""
    end = time.monotonic() + timeout
    m = {}
    while time.monotonic() < end:
        m = await metrics(client, daemon)
        if (m.get("llmserve_requests_running", 1) == 0 and m.get("llmserve_requests_waiting", 1) == 0
                and m.get("llmserve_kv_cache_blocks_free") == m.get("llmserve_kv_cache_blocks_total")):
            return m
        await asyncio.sleep(0.1)
    return m


async def sse_completion(client, daemon, body, stop_after_events=None, read_delay=0.0):
    """Streams /v1/completions. Returns (text, finish_reason, events); stops early (closing the
    connection) after stop_after_events data events; read_delay sleeps between events."""
    text, finish, events = "", None, 0
    async with client.stream("POST", daemon.url("/v1/completions"),
                             json=dict(body, stream=True), timeout=300) as r:
        if r.status_code != 200:
            await r.aread()
            return None, f"http {r.status_code}", 0
        async for line in r.aiter_lines():
            if not line.startswith("data: "):
                continue
            data = line[6:]
            if data == "[DONE]":
                break
            events += 1
            choice = json.loads(data)["choices"][0]
            text += choice.get("text", "")
            finish = choice.get("finish_reason") or finish
            if stop_after_events is not None and events >= stop_after_events:
                return text, "client-abort", events
            if read_delay:
                await asyncio.sleep(read_delay)
    return text, finish, events


def grpc_modules(tmp_dir):
    """Generates and imports llmserve/v1/generation_pb2*.py (needs grpcio-tools)."""
    from grpc_tools import protoc
    proto_dir = ROOT / "proto"
    rc = protoc.main(["protoc", f"-I{proto_dir}", f"--python_out={tmp_dir}",
                      f"--grpc_python_out={tmp_dir}",
                      str(proto_dir / "llmserve" / "v1" / "generation.proto")])
    assert rc == 0
    sys.path.insert(0, str(tmp_dir))
    from llmserve.v1 import generation_pb2, generation_pb2_grpc
    return generation_pb2, generation_pb2_grpc


async def grpc_generate(stub, pb2, prompt, max_tokens, stop_after_msgs=None, cancel_before=False):
    """Streams Generate. Returns (text, finish_reason); cancels the call when asked."""
    call = stub.Generate(pb2.GenerateRequest(prompt=prompt, max_tokens=max_tokens, temperature=0),
                         timeout=300)
    if cancel_before:
        await asyncio.sleep(0)
        call.cancel()
        return None, "client-abort"
    text, finish, n = "", None, 0
    async for msg in call:
        text += msg.text
        finish = msg.finish_reason or finish
        n += 1
        if stop_after_msgs is not None and n >= stop_after_msgs:
            call.cancel()
            return text, "client-abort"
    return text, finish


# Fixtures (imported by each test module: `from soak_util import soak_daemon, pb`; no
# conftest.py here, so tests/integration's `from conftest import ...` keeps finding its own).
@pytest.fixture
def soak_daemon():
    """start(*flags, env=None, binary=None) -> a ready Daemon; all are killed after the test."""
    why = serve_available()
    if why:
        pytest.skip(why)
    started = []

    def start(*extra_args, env=None, binary=None):
        if binary is not None:
            old = _it.BIN
            _it.BIN = binary
            try:
                d = Daemon(extra_args, env)
            finally:
                _it.BIN = old
        else:
            d = Daemon(extra_args, env)
        started.append(d)
        return d.wait_ready()

    yield start
    for d in started:
        d.stop(signal.SIGKILL)


@pytest.fixture(scope="session")
def pb(tmp_path_factory):
    pytest.importorskip("grpc")
    pytest.importorskip("grpc_tools")
    return grpc_modules(tmp_path_factory.mktemp("soak_grpc"))
