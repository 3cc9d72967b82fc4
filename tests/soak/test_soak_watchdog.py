"""Watchdog: with the engine loop wedged (LLMSERVE_FAULT_WEDGE_ENGINE, compiled only with
-DLLMSERVE_FAULT_INJECTION=ON; binary from LLMSERVE_FAULT_BIN, default build-fault/llmserve),
/ready turns 503 within the watchdog window while /health stays 200."""
import time

import pytest
import requests

import soak_util
from soak_util import soak_daemon  # noqa: F401 (fixtures)

WINDOW_S = 2.0


def test_ready_fails_when_engine_wedged(soak_daemon):
    if not soak_util.FAULT_BIN.exists():
        pytest.skip(f"{soak_util.FAULT_BIN} not built (cmake -DLLMSERVE_FAULT_INJECTION=ON "
                    "-B build-fault && ninja -C build-fault llmserve)")
    daemon = soak_daemon("--server.watchdog-seconds", str(WINDOW_S), binary=soak_util.FAULT_BIN,
                         env={"LLMSERVE_FAULT_WEDGE_ENGINE": "3"})
    assert requests.get(daemon.url("/ready"), timeout=5).status_code == 200
    # A request gives the engine pending work; it wedges after 3 steps.
    try:
        requests.post(daemon.url("/v1/completions"), json={"prompt": "x", "max_tokens": 50},
                      timeout=0.5)
    except requests.RequestException:
        pass
    t0 = time.monotonic()
    turned = None
    while time.monotonic() - t0 < WINDOW_S + 10:
        assert requests.get(daemon.url("/health"), timeout=5).status_code == 200
        if requests.get(daemon.url("/ready"), timeout=5).status_code == 503:
            turned = time.monotonic() - t0
            break
        time.sleep(0.05)
    print(f"watchdog: /ready 503 after {turned} s (window {WINDOW_S} s)")
    assert turned is not None and turned <= WINDOW_S + 1.5
    assert requests.get(daemon.url("/health"), timeout=5).status_code == 200
