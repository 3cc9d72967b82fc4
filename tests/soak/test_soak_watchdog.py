"""Watchdog: with the engine loop wedged (LLMSERVE_FAULT_WEDGE_ENGINE, a switch only the test
daemon build/llmserve-fault has: tests/fault/; LLMSERVE_FAULT_BIN overrides the path),
/ready turns 503 within the watchdog window while /health stays 200. The release daemon
ignores the switch (checked too)."""
import time

import requests

import soak_util
from soak_util import soak_daemon  # noqa: F401 (fixtures)

WINDOW_S = 2.0


def test_ready_fails_when_engine_wedged(soak_daemon):
    assert soak_util.FAULT_BIN.exists(), (
        f"{soak_util.FAULT_BIN} is not built (ninja -C build llmserve_fault)")
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


def test_release_daemon_has_no_wedge_switch(soak_daemon):
    daemon = soak_daemon(env={"LLMSERVE_FAULT_WEDGE_ENGINE": "1"})
    r = requests.post(daemon.url("/v1/completions"),
                      json={"prompt": "x", "max_tokens": 8, "ignore_eos": True}, timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["usage"]["completion_tokens"] == 8
    assert requests.get(daemon.url("/ready"), timeout=5).status_code == 200
