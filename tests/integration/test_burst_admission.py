"""Admission under a burst (issue 23 item 7): capacity is run slots + queue slots, counted the
same way whether the engine has moved a request to running yet or not."""
import threading

import requests

RUN_SLOTS, QUEUE_SLOTS = 8, 8


def open_stream(url, out, i, barrier):
    barrier.wait()
    r = requests.post(url, json={"prompt": f"Count to a thousand, {i}:", "max_tokens": 400,
                                 "ignore_eos": True, "stream": True}, stream=True, timeout=300)
    out[i] = r


def test_simultaneous_burst_fills_run_and_queue_slots(start_daemon):
    d = start_daemon("--engine.max-num-seqs", str(RUN_SLOTS),
                     "--server.max-waiting-requests", str(QUEUE_SLOTS))
    n = RUN_SLOTS + QUEUE_SLOTS
    responses = [None] * n
    barrier = threading.Barrier(n)
    threads = [threading.Thread(target=open_stream,
                                args=(d.url("/v1/completions"), responses, i, barrier))
               for i in range(n)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        codes = [r.status_code if r is not None else None for r in responses]
        # Before the fix: 8 x 429 (the burst was counted as waiting before any of it ran).
        assert codes == [200] * n, codes
        # All 16 are live (400 tokens each): one more is beyond capacity.
        extra = requests.post(d.url("/v1/completions"),
                              json={"prompt": "one more", "max_tokens": 2, "stream": True},
                              timeout=60)
        assert extra.status_code == 429, extra.text
        assert extra.json()["error"]["code"] == "queue_full"
        assert extra.headers["Retry-After"] == "1"
    finally:
        for r in responses:
            if r is not None:
                r.close()
