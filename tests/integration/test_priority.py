"""Priority end to end: with one run slot, a high-priority request (lower value, vLLM's
convention) that arrives under load is served before low-priority ones queued earlier."""
import threading
import time

import requests


def test_high_priority_request_overtakes_earlier_low_priority_ones(start_daemon):
    d = start_daemon("--engine.max-num-seqs", "1")
    order, lock = [], threading.Lock()

    def run(name, priority, max_tokens):
        r = requests.post(d.url("/v1/completions"), timeout=300,
                          json={"prompt": f"Request {name}:", "max_tokens": max_tokens,
                                "ignore_eos": True, "priority": priority})
        assert r.status_code == 200, r.text
        with lock:
            order.append(name)

    def start(name, priority, max_tokens, want_waiting):
        t = threading.Thread(target=run, args=(name, priority, max_tokens))
        t.start()
        end = time.time() + 60
        while d.metric("llmserve_requests_waiting") < want_waiting and time.time() < end:
            time.sleep(0.01)
        return t

    threads = [threading.Thread(target=run, args=("busy", 0, 160))]
    threads[0].start()
    end = time.time() + 60
    while d.metric("llmserve_requests_running") < 1 and time.time() < end:
        time.sleep(0.01)
    threads.append(start("low1", 5, 8, 1))
    threads.append(start("low2", 5, 8, 2))
    threads.append(start("high", -5, 8, 3))
    assert d.metric("llmserve_requests_running") == 1  # the busy one still runs
    for t in threads:
        t.join(timeout=300)
    assert order == ["busy", "high", "low1", "low2"], order
