"""The KV transfer planes under attack (issue 51), daemon to daemon over UCX on loopback.

A producer and a consumer share the deployment's secret; the session's plain daemon is the oracle
(the same request served alone). Each test is one of the outside probe's reproducers: a client
that edits a handoff (another user's blocks, an address of its choosing), a crafted handoff that
claims another prompt (prefix-cache poisoning), a consumer without the secret, a producer whose
leases pin the whole cache, a "producer" port that accepts and hangs. Every attack ends in a local
prefill with the oracle's answer, no connection where the client pointed, no byte of another
user's KV, and every block back.
"""
import socket
import threading
import time

import pytest
import requests

SECRET = "test-deployment-secret-0123456789"
PROMPT_A = ("Write a short note about the secret launch code PELICAN-4471 and why it must "
            "never be shared with anyone outside the team. ") * 3
PROMPT_B = ("Explain, step by step and in plain words, how a city's water supply travels from "
            "a mountain reservoir to a kitchen tap. ") * 3


def role(name, *extra):
    return (f"--kv-transfer.role={name}", "--kv-transfer.port=0", f"--kv-transfer.secret={SECRET}",
            *extra)


def complete(d, prompt, params=None, max_tokens=16, **kw):
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, **kw}
    if params is not None:
        body["kv_transfer_params"] = params
    r = requests.post(d.url("/v1/completions"), json=body, timeout=180)
    assert r.status_code == 200, r.text
    return r.json()


def prefill_leg(producer, prompt):
    """The prefill leg as vllm-router sends it (max_tokens 1, do_remote_decode)."""
    out = complete(producer, prompt, {"do_remote_decode": True, "do_remote_prefill": False},
                   max_tokens=1)
    return out.get("kv_transfer_params")


def text(out):
    return out["choices"][0]["text"]


def fallbacks(d, reason):
    return d.scrape().value("llmserve_kv_transfer_fallbacks_total", reason=reason)


def wait_all_free(*ds, timeout=60):
    end = time.time() + timeout
    while True:
        state = []
        for d in ds:
            s = d.scrape()
            state.append((s.value("llmserve_kv_cache_blocks_free"),
                          s.value("llmserve_kv_cache_blocks_total"),
                          s.value("llmserve_kv_transfer_pinned_blocks")))
        if all(free == total and pinned == 0 for free, total, pinned in state):
            return
        assert time.time() < end, f"KV blocks still held (free, total, pinned): {state}"
        time.sleep(0.2)


class Listener:
    """A TCP port that accepts connections and never answers; counts who came."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = []
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
                self.accepted.append(conn)
            except OSError:
                pass

    def close(self):
        self.stop = True
        self.thread.join()
        for c in self.accepted:
            c.close()
        self.sock.close()


@pytest.fixture
def pd(start_daemon):
    return start_daemon(*role("producer", "--kv-transfer.lease-seconds=20")), \
        start_daemon(*role("consumer"))


def test_signed_handoff_is_pulled_and_equals_one_daemon(pd, daemon):
    producer, consumer = pd
    params = prefill_leg(producer, PROMPT_B)
    assert len(params["remote_request_id"]) == 32  # a 128-bit token, not <engine>-<n>
    assert len(params["signature"]) == 64
    pulls = consumer.scrape().value("llmserve_kv_transfer_pulls_total")
    assert text(complete(consumer, PROMPT_B, params)) == text(complete(daemon, PROMPT_B))
    assert consumer.wait_metric("llmserve_kv_transfer_pulls_total", pulls + 1)
    wait_all_free(producer, consumer)


def test_edited_handoff_reads_nothing_and_connects_nowhere(pd, daemon):
    """Findings 1, 2, 8: another user's block ids (or ids past the cache) under one's own lease,
    or an address of the client's choosing: the signature no longer holds, so the consumer opens
    no connection and prefills locally."""
    producer, consumer = pd
    victim = prefill_leg(producer, PROMPT_A)
    mine = prefill_leg(producer, PROMPT_B)
    trap = Listener()
    try:
        edits = [
            {**mine, "remote_block_ids": victim["remote_block_ids"]},
            {**mine, "remote_block_ids": [2**31 - 1 - i for i in range(len(mine["remote_block_ids"]))]},
            {**mine, "remote_port": trap.port},
            {**mine, "remote_host": "10.254.254.254"},
            {k: v for k, v in mine.items() if k != "signature"},
        ]
        untrusted = fallbacks(consumer, "untrusted")
        want = text(complete(daemon, PROMPT_B))
        for i, params in enumerate(edits):
            assert text(complete(consumer, PROMPT_B, params)) == want, i
        assert consumer.wait_metric("llmserve_kv_transfer_fallbacks_total", untrusted + len(edits),
                       reason="untrusted")
        assert consumer.scrape().value("llmserve_kv_transfer_pulls_total") == 0
        time.sleep(0.5)
        assert trap.accepted == [], "the consumer connected where a client pointed it"
    finally:
        trap.close()
    # The victim's and the attacker's leases are untouched by all of it: the victim still pulls.
    assert text(complete(consumer, PROMPT_A, victim)) == text(complete(daemon, PROMPT_A))
    assert consumer.wait_metric("llmserve_kv_transfer_pulls_total", 1)


def test_crafted_prompt_claim_cannot_poison_the_prefix_cache(start_daemon, daemon):
    """Finding 3: a handoff that claims prompt B while its lease holds prompt A's KV. Even with
    client handoffs accepted (kv_transfer.accept_client_params, producer a configured peer), the
    producer attests what its lease holds; the consumer sees A != B, caches nothing, prefills."""
    producer = start_daemon(*role("producer", "--kv-transfer.lease-seconds=20"))
    consumer = start_daemon(*role("consumer", "--kv-transfer.accept-client-params=true",
                                  "--kv-transfer.peers=127.0.0.1"))
    lease_a = prefill_leg(producer, PROMPT_A)
    claim_b = prefill_leg(producer, PROMPT_B)
    forged = {**claim_b, "remote_request_id": lease_a["remote_request_id"]}
    del forged["signature"]
    prompt = fallbacks(consumer, "prompt")
    want = text(complete(daemon, PROMPT_B))
    assert text(complete(consumer, PROMPT_B, forged)) == want
    assert consumer.wait_metric("llmserve_kv_transfer_fallbacks_total", prompt + 1, reason="prompt")
    assert consumer.scrape().value("llmserve_kv_transfer_pulls_total") == 0
    # An ordinary user's prompt B afterwards (a prefix-cache hit if anything was cached) is right.
    assert text(complete(consumer, PROMPT_B)) == want
    wait_all_free(producer, consumer)


def test_consumer_without_the_secret_gets_nothing(pd, start_daemon, daemon):
    """A rogue daemon holding a valid handoff but not the secret: the producer's MAC fails on
    its side, it reads no byte, and cannot release the lease (which still serves its owner)."""
    producer, consumer = pd
    rogue = start_daemon("--kv-transfer.role=consumer", "--kv-transfer.port=0",
                         "--kv-transfer.secret=some-other-secret-0123456789",
                         "--kv-transfer.accept-client-params=true", "--kv-transfer.peers=127.0.0.1")
    params = prefill_leg(producer, PROMPT_A)
    want = text(complete(daemon, PROMPT_A))
    assert text(complete(rogue, PROMPT_A, params)) == want
    assert rogue.wait_metric("llmserve_kv_transfer_fallbacks_total", 1, reason="auth")
    assert rogue.scrape().value("llmserve_kv_transfer_bytes_total") == 0
    assert producer.wait_metric("llmserve_kv_transfer_pinned_blocks", len(params["remote_block_ids"]))
    assert text(complete(consumer, PROMPT_A, params)) == want
    assert consumer.wait_metric("llmserve_kv_transfer_pulls_total", 1)
    wait_all_free(producer, consumer, rogue)


def test_pinned_block_budget_answers_no_handoff_past_it(start_daemon, daemon):
    """Finding 6: every prefill pinned for 30 s with no cap starved everyone else."""
    producer = start_daemon(*role("producer", "--kv-transfer.max-pinned-blocks=8",
                                  "--kv-transfer.lease-seconds=30"))
    first = prefill_leg(producer, PROMPT_A)  # ~70 tokens: 5 blocks of 16
    assert first is not None and len(first["remote_block_ids"]) <= 8
    refused = producer.scrape().value("llmserve_kv_transfer_leases_refused_total")
    assert prefill_leg(producer, PROMPT_B) is None  # 5 more would pass 8
    assert producer.wait_metric("llmserve_kv_transfer_leases_refused_total", refused + 1)
    # Ordinary requests are served as before, and an unflagged long request pins nothing.
    assert text(complete(producer, PROMPT_B)) == text(complete(daemon, PROMPT_B))
    assert producer.wait_metric("llmserve_kv_transfer_pinned_blocks", len(first["remote_block_ids"]))


def test_hanging_producer_holds_no_slot_of_the_consumer(start_daemon, daemon):
    """Finding 7: requests naming a port that accepts and hangs held blocks and a sequence slot
    for the pull timeout. Now they wait for their producer's answer holding neither: with two
    sequence slots and four such requests waiting, another user's request runs at once."""
    producer = start_daemon(*role("producer", "--kv-transfer.lease-seconds=20"))
    consumer = start_daemon(*role("consumer", "--kv-transfer.accept-client-params=true",
                                  "--kv-transfer.peers=127.0.0.1",
                                  "--kv-transfer.connect-timeout-seconds=60"),
                            "--max-num-seqs=2")
    trap = Listener()
    threads = []
    try:
        # A real handoff for this prompt, pointed at the hanging port (trusted: the operator lets
        # clients name peers, and 127.0.0.1 is one).
        params = {**prefill_leg(producer, PROMPT_B), "remote_port": trap.port}
        del params["signature"]
        done = []

        def hanging():
            complete(consumer, PROMPT_B, params, max_tokens=2)
            done.append("hanging")

        threads = [threading.Thread(target=hanging) for _ in range(4)]
        for t in threads:
            t.start()
        end = time.time() + 120
        while not trap.accepted:  # the consumer is now waiting on the hanging port
            assert time.time() < end, "the consumer never connected to the configured peer"
            time.sleep(0.05)
        out = complete(consumer, "Say hello.", max_tokens=4)
        done.append("other")
        assert out["choices"][0]["finish_reason"] in ("length", "stop")
        assert done[0] == "other", done
    finally:
        trap.close()
        for t in threads:
            t.join(timeout=180)
