"""KV events on ZeroMQ, read by a subscriber written against vLLM's format (pyzmq + msgspec):
the prefix index it rebuilds from our events agrees with /metrics and with the tokens of the
requests sent, sequence numbers run without gaps, the replay socket re-sends buffered batches,
eviction and a reset show up as BlockRemoved / AllBlocksCleared."""
import time

import pytest
import requests
import zmq

from conftest import start_workers
from kv_event_decoder import DECODER, PrefixIndex


@pytest.fixture(scope="module")
def worker():
    # A small cache (16 MiB: 45 blocks of 16 tokens of SmolLM2-135M) so that eviction happens;
    # the topic llm-d's subscribers parse (kv@<pod>@<model>).
    (w,) = start_workers(1, ("--kv-events.topic=kv@test-pod@test-model",), kv_cache_bytes="16MiB")
    yield w
    w.stop()


@pytest.fixture
def subscriber(worker):
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"kv@")
    sub.connect(worker.kv_endpoint)
    time.sleep(0.5)  # a PUB socket drops what it sends before the subscription arrives
    yield sub
    sub.close(linger=0)
    ctx.term()


def drain(sub, index, seqs, quiet_s=0.5):
    """Applies every message until none came for quiet_s; returns the topics seen."""
    topics = set()
    while sub.poll(int(quiet_s * 1000)):
        topic, seq, payload = sub.recv_multipart()
        topics.add(topic.decode())
        seqs.append(int.from_bytes(seq, "big"))
        batch = DECODER.decode(payload)
        assert batch.data_parallel_rank == 0
        index.apply(batch)
    return topics


def complete(worker, prompt, max_tokens=4):
    r = requests.post(worker.url("/v1/completions"), timeout=120,
                      json={"prompt": prompt, "max_tokens": max_tokens, "temperature": 0})
    assert r.status_code == 200, r.text
    return r.json()


def tokens_of(worker, text):
    return requests.post(worker.url("/tokenize"), json={"prompt": text}, timeout=30).json()["tokens"]


def cached_blocks(worker):
    return worker.scrape().value("llmserve_prefix_cache_blocks")


def test_index_rebuilt_from_events_agrees_with_metrics_and_prompts(worker, subscriber):
    requests.post(worker.url("/reset_prefix_cache"), timeout=30).raise_for_status()
    index, seqs = PrefixIndex(), []
    topics = drain(subscriber, index, seqs)
    index.blocks.clear()
    system = "You are a careful assistant who answers in short sentences. " * 3
    prompts = [system + q for q in ("What is rain?", "Why is the sky blue?", "What is snow?")]
    for p in prompts:
        complete(worker, p)
    topics |= drain(subscriber, index, seqs)
    assert topics == {"kv@test-pod@test-model"}
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs  # no gaps
    assert len(index.blocks) == cached_blocks(worker) > 0
    # Every prompt's full blocks are in the index, chained from its first block, with its tokens.
    by_tokens = {tuple(index.chain_tokens(h)): h for h in index.blocks}
    for p in prompts:
        ids = tokens_of(worker, p)
        full = len(ids) // 16 * 16
        assert tuple(ids[:full]) in by_tokens, p
    # The shared system prompt's blocks were stored once, not once per request.
    shared = len(tokens_of(worker, system)) // 16
    roots = [h for h, (parent, _) in index.blocks.items() if parent is None]
    assert len(roots) == 1 and shared >= 2


def test_eviction_and_reset_keep_the_index_equal_to_the_cache(worker, subscriber):
    index, seqs = PrefixIndex(), []
    requests.post(worker.url("/reset_prefix_cache"), timeout=30).raise_for_status()
    drain(subscriber, index, seqs)
    assert index.cleared >= 1 and not index.blocks
    # Distinct prompts of ~150 tokens each: the cache holds a few, so older ones go.
    for i in range(12):
        complete(worker, f"Document {i}. " + " ".join(f"word{i}x{j}" for j in range(40)), 1)
    drain(subscriber, index, seqs)
    assert index.removed > 0, "the small cache never evicted"
    assert len(index.blocks) == cached_blocks(worker) > 0
    r = requests.post(worker.url("/reset_prefix_cache"), timeout=30)
    assert r.json() == {"success": True}
    drain(subscriber, index, seqs)
    assert not index.blocks and cached_blocks(worker) == 0
    assert worker.scrape().value("llmserve_kv_events_dropped_batches_total") == 0


def test_replay_resends_buffered_batches_from_a_sequence_number(worker, subscriber):
    index, seqs = PrefixIndex(), []
    complete(worker, "Replay me: " + "alpha beta gamma delta " * 12)
    drain(subscriber, index, seqs)
    assert seqs
    ctx = zmq.Context.instance()
    dealer = ctx.socket(zmq.DEALER)
    dealer.connect(worker.replay_endpoint)
    dealer.send_multipart([b"", seqs[-1].to_bytes(8, "big")])
    got = []
    while dealer.poll(5000):
        empty, seq, payload = dealer.recv_multipart()
        assert empty == b""
        n = int.from_bytes(seq, "big", signed=True)
        if n == -1:
            assert payload == b""
            break
        got.append(n)
        DECODER.decode(payload)
    dealer.close(linger=0)
    assert got == [seqs[-1]]


def test_array_layout_decodes_with_vllms_earlier_array_like_structs():
    from kv_event_decoder import LEGACY_DECODER
    (w,) = start_workers(1, ("--kv-events.layout=array",))
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(w.kv_endpoint)
    try:
        time.sleep(0.5)
        complete(w, "Arrays, as vLLM once sent them: " + "one two three four " * 10)
        index = PrefixIndex()
        while sub.poll(1000):
            _, _, payload = sub.recv_multipart()
            index.apply(LEGACY_DECODER.decode(payload))
            with pytest.raises(Exception):
                DECODER.decode(payload)  # not the map layout
        assert index.stored and len(index.blocks) == cached_blocks(w) > 0
    finally:
        sub.close(linger=0)
        ctx.term()
        w.stop()
