"""smg's cache_aware policy over gRPC keeps a multi-turn conversation on the llmserve daemon that
holds its prefix: with KV events (SubscribeKvEvents: smg indexes the workers' real blocks from
the token ids we send) and in approximate mode (KV events off: SubscribeKvEvents is UNIMPLEMENTED
and smg keeps its own tree of what it routed). Which worker served a request is read from the
workers' own counters of VllmEngine/Generate calls.
"""
import signal
import time

import pytest
import requests
from conftest import Daemon, free_port, serve_available
from smg_gateway import Smg

TOPICS = ["volcanoes of Iceland", "the history of Venice", "growing tomatoes on a balcony",
          "the rules of cricket"]


def generate_calls(d) -> float:
    return d.scrape().value("llmserve_grpc_requests_total", method="VllmEngine/Generate",
                            code="OK")


@pytest.fixture(params=["kv_events", "approximate"])
def routed(request):
    why = serve_available()
    if why:
        pytest.skip(why)
    extra = ["--threads", "1"]
    if request.param == "kv_events":
        extra += ["--kv-events.enabled=true", f"--kv-events.endpoint=tcp://127.0.0.1:{free_port()}"]
    workers = [Daemon(extra) for _ in range(2)]
    gateway = None
    try:
        for w in workers:
            w.wait_ready()
        model = requests.get(workers[0].url("/v1/models"), timeout=10).json()["data"][0]["id"]
        gateway = Smg(workers, policy="cache_aware", log_level="debug").wait_ready(model)
        yield request.param, workers, gateway, model
    finally:
        if gateway:
            gateway.stop()
        for w in workers:
            w.stop(signal.SIGKILL)


def test_cache_aware_keeps_each_conversation_on_one_worker(routed):
    mode, workers, gateway, model = routed
    conversations = [[{"role": "system", "content": (
        f"You are an expert on {topic}. Answer every question about {topic} carefully, "
        f"in plain words, and keep in mind everything said before about {topic}.")}]
        for topic in TOPICS]
    served = {i: [] for i in range(len(conversations))}
    for turn in range(3):
        for i, messages in enumerate(conversations):
            messages.append({"role": "user", "content": f"Question {turn + 1}: tell me more."})
            before = [generate_calls(w) for w in workers]
            r = requests.post(gateway.url + "/v1/chat/completions", timeout=120, json={
                "model": model, "messages": messages, "max_tokens": 8, "temperature": 0})
            assert r.status_code == 200, r.text
            messages.append({"role": "assistant",
                             "content": r.json()["choices"][0]["message"]["content"]})
            after = [generate_calls(w) for w in workers]
            moved = [k for k in range(len(workers)) if after[k] > before[k]]
            assert len(moved) == 1, (before, after)
            served[i].append(moved[0])
    for i, where in served.items():
        assert len(set(where)) == 1, f"conversation {i} moved between workers: {where}"
    assert len({where[0] for where in served.values()}) == 2, served  # both workers were used
    logs = gateway.log_path.read_text(errors="replace")
    if mode == "kv_events":
        assert logs.count("KV event stream connected") >= 2
        assert "Learned block_size from KV event" in logs
    else:
        assert "KV event stream connected" not in logs
