"""vllm-router 0.1.17 (PyPI) in front of two llmserve HTTP workers on loopback: every answer through
the router equals the worker's own; cache_aware tokenizes through our render routes; kv_aware
routes by the KV events llmserve publishes."""
import time

import pytest
import requests

from conftest import free_port, venv_bin
from router_requests import text_of

KINDS = [("chat", False), ("chat", True), ("completion", False), ("completion", True)]


def vllm_router(start_router, workers, policy, *extra):
    port = free_port()
    args = [venv_bin("vllm-router"), "--host", "127.0.0.1", "--port", str(port),
            "--prometheus-port", str(free_port()), "--policy", policy,
            "--worker-urls", *[w.base_url for w in workers], *extra]
    return start_router(args, port)


@pytest.mark.parametrize("policy", ["round_robin", "cache_aware"])
def test_answers_through_the_router_equal_the_workers_own(start_router, workers, model_name,
                                                           policy):
    router = vllm_router(start_router, workers, policy)
    before = [w.counter("/v1/chat/completions") + w.counter("/v1/completions") for w in workers]
    for kind, stream in KINDS:
        direct = text_of(workers[0].base_url, kind, model_name, stream)
        assert direct, (kind, stream)
        for _ in range(2):  # round_robin: once on each worker
            routed = text_of(router.base_url, kind, model_name, stream)
            assert routed == direct, (policy, kind, stream, router.logs())
    served = [w.counter("/v1/chat/completions") + w.counter("/v1/completions") - b
              for w, b in zip(workers, before)]
    assert sum(served) == 8 + 4  # 8 through the router, 4 sent directly to worker 0
    if policy == "round_robin":
        assert served[1] >= 4, served  # the router used both workers


def test_cache_aware_tokenizes_through_the_render_routes(start_router, workers, model_name):
    router = vllm_router(start_router, workers, "cache_aware")
    before = [(w.counter("/v1/completions/render"), w.counter("/v1/chat/completions/render"))
              for w in workers]
    text_of(router.base_url, "chat", model_name, False)
    text_of(router.base_url, "completion", model_name, False)
    for w, (comp, chat) in zip(workers, before):
        s = w.scrape()
        # Every render call succeeded (a 4xx would show under its own code).
        for (name, labels), v in s.samples.items():
            if name == "llmserve_http_requests_total" and "render" in dict(labels)["route"]:
                assert dict(labels)["code"] == "200" or v == 0, (labels, v)
        assert w.counter("/v1/completions/render") > comp
        assert w.counter("/v1/chat/completions/render") > chat


def seed(worker, model_name, prompt):
    r = requests.post(worker.url("/v1/completions"), timeout=120,
                      json={"model": model_name, "prompt": prompt, "max_tokens": 1,
                            "temperature": 0})
    assert r.status_code == 200, r.text


def test_kv_aware_routes_each_prompt_to_the_worker_whose_cache_holds_it(
        start_router, workers, model_name):
    w0, w1 = workers
    router = vllm_router(
        start_router, workers, "kv_aware",
        "--kv-event-source", f"{w0.base_url}={w0.kv_endpoint}",
        "--kv-event-source", f"{w1.base_url}={w1.kv_endpoint}",
        "--kv-event-replay-source", f"{w0.base_url}={w0.replay_endpoint}",
        "--kv-event-replay-source", f"{w1.base_url}={w1.replay_endpoint}",
        "--kv-event-block-size", "16", "--kv-event-model", model_name, "--log-level", "debug")
    stories = [f"Story {i}: once there was a {animal} who lived by the {place} and loved to "
               f"{hobby} every single day, rain or shine, with friends and family. " * 3
               for i, (animal, place, hobby) in enumerate([
                   ("fox", "river", "sing"), ("bear", "mountain", "paint"),
                   ("owl", "forest", "read"), ("whale", "ocean", "dance")])]
    holders = [w0, w1, w0, w1]
    time.sleep(1.0)  # the router's SUB sockets join (PUB drops messages sent before)
    for prompt, holder in zip(stories, holders):
        seed(holder, model_name, prompt)  # directly: only the events tell the router
    time.sleep(1.0)  # events reach the router's index
    for prompt, holder in zip(stories, holders):
        other = w1 if holder is w0 else w0
        before = (holder.counter("/v1/completions"), other.counter("/v1/completions"))
        hits = holder.scrape().value("llmserve_prefix_cache_hits_total")
        r = requests.post(router.url("/v1/completions"), timeout=120,
                          json={"model": model_name, "prompt": prompt, "max_tokens": 1,
                                "temperature": 0})
        assert r.status_code == 200, r.text
        assert holder.counter("/v1/completions") == before[0] + 1, router.logs()
        assert other.counter("/v1/completions") == before[1]
        assert holder.scrape().value("llmserve_prefix_cache_hits_total") > hits
