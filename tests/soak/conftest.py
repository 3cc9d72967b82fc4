"""Fixtures of the soak tests (tests/soak): daemons started with soak-sized options. The whole
directory skips cleanly when `llmserve serve` or the model is not there."""
import signal

import pytest

import soak_util


@pytest.fixture
def soak_daemon():
    """start(*flags, env=None, binary=None) -> a ready Daemon; all are killed after the test."""
    why = soak_util.serve_available()
    if why:
        pytest.skip(why)
    started = []

    def start(*extra_args, env=None, binary=None):
        if binary is not None:
            old = soak_util._it.BIN
            soak_util._it.BIN = binary
            try:
                d = soak_util.Daemon(extra_args, env)
            finally:
                soak_util._it.BIN = old
        else:
            d = soak_util.Daemon(extra_args, env)
        started.append(d)
        return d.wait_ready()

    yield start
    for d in started:
        d.stop(signal.SIGKILL)


@pytest.fixture(scope="session")
def pb(tmp_path_factory):
    pytest.importorskip("grpc")
    pytest.importorskip("grpc_tools")
    return soak_util.grpc_modules(tmp_path_factory.mktemp("soak_grpc"))
