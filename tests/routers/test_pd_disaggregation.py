"""Disaggregated prefill/decode (docs/DISAGGREGATION.md): two llmserve daemons, a producer
(kv_transfer.role producer) and a consumer, driven by the real routers from PyPI: vllm-router
(`--vllm-pd-disaggregation`, HTTP workers) and smg (`--pd-disaggregation`, gRPC workers). The
oracle is a third daemon serving the same requests alone: the answers must be identical (greedy
and seeded, streamed and not, n > 1), and the consumer's metrics must show that the KV moved
(pulls, bytes) instead of a silent local prefill. Faults (producer hung or killed, a consumer of
another layout, a handoff never pulled, a client gone mid-request) fall back to a local prefill
or expire, and every daemon ends with all its KV blocks free."""
import os
import signal
import subprocess
import threading
import time

import pytest
import requests
from pathlib import Path
from conftest import WORKER_ARGS, Daemon, free_port, serve_available, venv_bin
from router_requests import path, text_of

LEASE_S = 4
SECRET = ("--kv-transfer.secret=router-test-deployment-secret",)


def daemon(*extra):
    d = Daemon((*WORKER_ARGS, "--kv-cache-bytes", "64MiB", *extra))
    try:
        return d.wait_ready()
    except RuntimeError:
        d.stop(signal.SIGKILL)
        raise


def producer_args(port):
    return ("--kv-transfer.role=producer", f"--kv-transfer.port={port}",
            f"--kv-transfer.lease-seconds={LEASE_S}", *SECRET)


@pytest.fixture(scope="module")
def pd():
    why = serve_available()
    if why:
        pytest.skip(why)
    ds = {}
    try:
        ds["producer"] = daemon(*producer_args(free_port()))
        ds["consumer"] = daemon("--kv-transfer.role=consumer", "--kv-transfer.port=0",
                                "--kv-transfer.pull-timeout-seconds=3", *SECRET)
        ds["single"] = daemon()
        yield ds
    finally:
        for d in ds.values():
            d.stop()


@pytest.fixture(scope="module")
def model(pd):
    return requests.get(pd["single"].url("/v1/models"), timeout=10).json()["data"][0]["id"]


def metric(d, name, **labels):
    s = d.scrape()
    return sum(v for (n, ls), v in s.samples.items()
               if n == name and all(dict(ls).get(k) == v2 for k, v2 in labels.items()))


def wait_all_free(*ds, timeout=30):
    """Every usable KV block free (or cached and evictable) and nothing pinned, on every daemon."""
    end = time.time() + timeout
    while True:
        state = [(metric(d, "llmserve_kv_cache_blocks_free"),
                  metric(d, "llmserve_kv_cache_blocks_total"),
                  metric(d, "llmserve_kv_transfer_pinned_blocks")) for d in ds]
        if all(free == total and pinned == 0 for free, total, pinned in state):
            return
        assert time.time() < end, f"KV blocks still held (free, total, pinned): {state}"
        time.sleep(0.2)


LONG = ("Explain, step by step and in plain words, how a city's water supply travels from a "
        "mountain reservoir through treatment plants and pipes to a kitchen tap, and what can "
        "go wrong along the way. ") * 2
CASES = [
    ("completion", {"prompt": LONG}),
    ("chat", {"messages": [{"role": "user", "content": LONG}]}),
]
SAMPLING = [{"temperature": 0}, {"temperature": 0.9, "seed": 1234, "top_p": 0.95}]


def prefill_leg(producer, kind, model, extra):
    """The prefill leg as vllm-router sends it (max_tokens 1, do_remote_decode)."""
    body = {"model": model, "max_tokens": 1, "stream": False, **extra,
            "kv_transfer_params": {"do_remote_decode": True, "do_remote_prefill": False}}
    r = requests.post(producer.url(path(kind)), json=body, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()["kv_transfer_params"]


# ---- vllm-router, HTTP workers ----

@pytest.fixture(scope="module")
def vllm_router(pd):
    port = free_port()
    log = open(Path(os.environ.get("TMPDIR", "/tmp")) / f"vllm-router-pd-{port}.log", "w")
    proc = subprocess.Popen([venv_bin("vllm-router"), "--host", "127.0.0.1", "--port", str(port),
                             "--vllm-pd-disaggregation", "--prefill", pd["producer"].base_url,
                             "--decode", pd["consumer"].base_url, "--policy", "round_robin"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    end = time.time() + 60
    while time.time() < end:
        try:
            if requests.get(url + "/health", timeout=2).status_code == 200:
                break
        except requests.RequestException:
            time.sleep(0.3)
    yield url
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=20)
    log.close()


@pytest.mark.parametrize("kind,extra", CASES, ids=["completion", "chat"])
@pytest.mark.parametrize("sampling", SAMPLING, ids=["greedy", "seeded"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_vllm_router_pd_equals_one_daemon(pd, vllm_router, model, kind, extra, sampling, stream):
    consumer = pd["consumer"]
    pulls, nbytes = (metric(consumer, "llmserve_kv_transfer_pulls_total"),
                     metric(consumer, "llmserve_kv_transfer_bytes_total"))
    args = {**extra, **sampling, "max_tokens": 24}
    via = text_of(vllm_router, kind, model, stream, **args)
    alone = text_of(pd["single"].base_url, kind, model, stream, **args)
    assert via == alone
    assert metric(consumer, "llmserve_kv_transfer_pulls_total") == pulls + 1
    assert metric(consumer, "llmserve_kv_transfer_bytes_total") > nbytes
    wait_all_free(pd["producer"], consumer)


def test_vllm_router_pd_n2_recomputed_on_the_consumer(pd, vllm_router, model):
    consumer = pd["consumer"]
    pulls = metric(consumer, "llmserve_kv_transfer_pulls_total")
    leases = metric(pd["producer"], "llmserve_kv_transfer_leases_total")
    body = {"model": model, "prompt": LONG, "max_tokens": 16, "n": 2, "temperature": 0.8,
            "seed": 5}
    via = requests.post(vllm_router + "/v1/completions", json=body, timeout=120).json()
    alone = requests.post(pd["single"].url("/v1/completions"), json=body, timeout=120).json()
    assert [c["text"] for c in via["choices"]] == [c["text"] for c in alone["choices"]]
    assert len(via["choices"]) == 2
    # The producer keeps no KV for n > 1 and answers no handoff: the consumer prefills itself.
    assert metric(consumer, "llmserve_kv_transfer_pulls_total") == pulls
    assert metric(pd["producer"], "llmserve_kv_transfer_leases_total") == leases
    wait_all_free(pd["producer"], consumer)


# ---- smg, gRPC workers ----

def test_smg_grpc_pd_equals_one_daemon(pd, model):
    consumer = pd["consumer"]
    port = free_port()
    log_path = f"{os.environ.get('TMPDIR', '/tmp')}/smg-pd-{port}.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [venv_bin("smg"), "launch", "--host", "127.0.0.1", "--port", str(port),
         "--pd-disaggregation", "--prefill", f"grpc://{pd['producer'].grpc_target}",
         "--decode", f"grpc://{consumer.grpc_target}", "--policy", "round_robin",
         "--prometheus-port", str(free_port()), "--worker-startup-check-interval", "1"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        end = time.time() + 240
        while True:
            assert proc.poll() is None, open(log_path).read()[-4000:]
            try:
                r = requests.post(url + "/v1/chat/completions", timeout=60, json={
                    "model": model, "messages": [{"role": "user", "content": "hi"}],
                    "max_tokens": 1, "temperature": 0})
                if r.status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.time() < end, open(log_path).read()[-4000:]
            time.sleep(1)
        wait_all_free(pd["producer"], consumer)
        for sampling in SAMPLING:
            for stream in (False, True):
                pulls = metric(consumer, "llmserve_kv_transfer_pulls_total")
                args = {"messages": [{"role": "user", "content": LONG}], **sampling,
                        "max_tokens": 24}
                via = text_of(url, "chat", model, stream, **args)
                alone = text_of(pd["single"].base_url, "chat", model, stream, **args)
                assert via == alone, (sampling, stream)
                assert metric(consumer, "llmserve_kv_transfer_pulls_total") == pulls + 1
        wait_all_free(pd["producer"], consumer)
        # n > 1 through smg: the producer answers no handoff for it and the consumer prefills.
        pulls = metric(consumer, "llmserve_kv_transfer_pulls_total")
        body = {"model": model, "messages": [{"role": "user", "content": LONG}], "n": 2,
                "max_tokens": 16, "temperature": 0.8, "seed": 5}
        r = requests.post(url + "/v1/chat/completions", json=body, timeout=120)
        assert r.status_code == 200, r.text
        via = sorted((c["index"], c["message"]["content"]) for c in r.json()["choices"])
        alone = requests.post(pd["single"].url("/v1/chat/completions"), json=body,
                              timeout=120).json()
        assert via == sorted((c["index"], c["message"]["content"]) for c in alone["choices"])
        assert len(via) == 2
        assert metric(consumer, "llmserve_kv_transfer_pulls_total") == pulls
        wait_all_free(pd["producer"], consumer)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
        log.close()


# ---- faults ----

def decode_leg(consumer, kind, model, extra, params, **kw):
    body = {"model": model, "max_tokens": 16, "temperature": 0, **extra,
            "kv_transfer_params": params, **kw}
    r = requests.post(consumer.url(path(kind)), json=body, timeout=120)
    assert r.status_code == 200, r.text
    c = r.json()["choices"][0]
    return c["message"]["content"] if kind == "chat" else c["text"]


def test_handoff_never_pulled_expires(pd, model):
    producer = pd["producer"]
    expired = metric(producer, "llmserve_kv_transfer_leases_expired_total")
    params = prefill_leg(producer, "completion", model, {"prompt": LONG})
    assert params["do_remote_prefill"] is True and params["pairing_protocol"] == "llmserve-kv/2"
    assert metric(producer, "llmserve_kv_transfer_pinned_blocks") == len(params["remote_block_ids"])
    wait_all_free(producer, timeout=LEASE_S + 10)
    assert metric(producer, "llmserve_kv_transfer_leases_expired_total") == expired + 1
    # The consumer given the expired handoff finds the lease gone and prefills locally.
    lease = metric(pd["consumer"], "llmserve_kv_transfer_fallbacks_total", reason="lease")
    got = decode_leg(pd["consumer"], "completion", model, {"prompt": LONG}, params)
    assert got == text_of(pd["single"].base_url, "completion", model, False, prompt=LONG,
                          max_tokens=16)
    assert metric(pd["consumer"], "llmserve_kv_transfer_fallbacks_total",
                  reason="lease") == lease + 1
    wait_all_free(producer, pd["consumer"])


def test_consumer_of_another_layout_refuses_and_prefills_locally(pd, model):
    producer = pd["producer"]
    other = daemon("--kv-transfer.role=consumer", "--kv-transfer.port=0", "--block-size", "32",
                   *SECRET)
    try:
        expired = metric(producer, "llmserve_kv_transfer_leases_expired_total")
        params = prefill_leg(producer, "chat", model,
                             {"messages": [{"role": "user", "content": LONG}]})
        got = decode_leg(other, "chat", model, {"messages": [{"role": "user", "content": LONG}]},
                         params)
        alone = text_of(pd["single"].base_url, "chat", model, False,
                        messages=[{"role": "user", "content": LONG}], max_tokens=16)
        assert got == alone
        assert metric(other, "llmserve_kv_transfer_fallbacks_total", reason="layout") == 1
        assert metric(other, "llmserve_kv_transfer_pulls_total") == 0
        assert metric(other, "llmserve_kv_transfer_bytes_total") == 0
        # The refusal released the producer's lease at once (not by expiry).
        wait_all_free(producer, other, timeout=LEASE_S - 1)
        assert metric(producer, "llmserve_kv_transfer_leases_expired_total") == expired
    finally:
        other.stop()


def test_producer_hung_then_killed_mid_transfer(pd, model):
    producer = daemon(*producer_args(free_port()))
    consumer = pd["consumer"]
    try:
        params = prefill_leg(producer, "completion", model, {"prompt": LONG})
        producer.proc.send_signal(signal.SIGSTOP)  # the pull connects, then nothing answers
        timeouts = metric(consumer, "llmserve_kv_transfer_fallbacks_total", reason="timeout")
        connects = metric(consumer, "llmserve_kv_transfer_fallbacks_total", reason="connect")
        killer = threading.Timer(1.0, lambda: producer.proc.send_signal(signal.SIGKILL))
        killer.start()
        got = decode_leg(consumer, "completion", model, {"prompt": LONG}, params)
        killer.join()
        assert got == text_of(pd["single"].base_url, "completion", model, False, prompt=LONG,
                              max_tokens=16)
        failed = (metric(consumer, "llmserve_kv_transfer_fallbacks_total", reason="timeout")
                  - timeouts + metric(consumer, "llmserve_kv_transfer_fallbacks_total",
                                      reason="connect") - connects)
        assert failed >= 1
        wait_all_free(consumer)
    finally:
        producer.proc.send_signal(signal.SIGKILL)
        producer.stop()


def test_client_gone_between_and_during_legs(pd, model):
    producer, consumer = pd["producer"], pd["consumer"]
    params = prefill_leg(producer, "completion", model, {"prompt": LONG})
    # The decode leg is sent and its client disconnects at once: the consumer's request ends
    # (its pull cancelled or done) and every block comes back on both daemons.
    body = {"model": model, "prompt": LONG, "max_tokens": 200, "temperature": 0, "stream": True,
            "kv_transfer_params": params}
    r = requests.post(consumer.url("/v1/completions"), json=body, stream=True, timeout=60)
    r.close()
    wait_all_free(producer, consumer, timeout=LEASE_S + 15)
    # Between the legs: the prefill answered, no decode leg ever comes; the lease expires.
    prefill_leg(producer, "completion", model, {"prompt": LONG + " Again."})
    wait_all_free(producer, consumer, timeout=LEASE_S + 15)


def test_bad_handoff_is_a_400_naming_the_field(pd, model):
    bad = {"do_remote_prefill": True, "pairing_protocol": "llmserve-kv/2",
           "remote_host": "127.0.0.1", "remote_port": 70000}
    r = requests.post(pd["consumer"].url("/v1/completions"), timeout=30, json={
        "model": model, "prompt": "hi", "max_tokens": 2, "kv_transfer_params": bad})
    assert r.status_code == 400
    assert "kv_transfer_params." in r.json()["error"]["message"]
    r = requests.post(pd["consumer"].url("/v1/completions"), timeout=30, json={
        "model": model, "prompt": "hi", "max_tokens": 2, "kv_transfer_params": [1]})
    assert r.status_code == 400
    # vLLM's own handoff (no llmserve pairing protocol) is prefilled here, not an error.
    vllm = {"do_remote_prefill": True, "remote_engine_id": "x", "remote_block_ids": [1],
            "remote_host": "127.0.0.1", "remote_port": 5600, "tp_size": 1}
    r = requests.post(pd["consumer"].url("/v1/completions"), timeout=30, json={
        "model": model, "prompt": "hi", "max_tokens": 2, "temperature": 0,
        "kv_transfer_params": vllm})
    assert r.status_code == 200
    wait_all_free(pd["consumer"])


def test_server_info_reports_role_and_pairing(pd):
    import grpc
    from smg_grpc_proto import vllm_engine_pb2 as pb, vllm_engine_pb2_grpc as pbg
    for name, role in (("producer", "kv_producer"), ("consumer", "kv_consumer")):
        with grpc.insecure_channel(pd[name].grpc_target) as ch:
            info = pbg.VllmEngineStub(ch).GetServerInfo(pb.GetServerInfoRequest(), timeout=10)
        assert info.kv_role == role and info.kv_connector == "LlmserveConnector"
        assert info.pairing_protocol == "llmserve-kv/2" and len(info.kv_engine_id) == 16
