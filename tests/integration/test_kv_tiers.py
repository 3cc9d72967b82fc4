"""The tiers below the KV page pool, end to end (issue 54): a conversation evicted from a small
pool, and the same conversation after a daemon restart, come back from disk or host memory with
the same greedy completion (the openai SDK compares against a daemon without tiers); a full host
tier demotes pages to disk and a restart finds what host memory held; `cache_salt` keeps a
tenant's pages to itself; /metrics shows the tiers; a bad cache_salt is a 400 naming the field,
a host tier too small for one page stops the start-up naming its key."""
import shutil
import subprocess
import tempfile

import pytest
import requests

from conftest import BIN, MODEL, serve_available

openai = pytest.importorskip("openai")

# SmolLM2-135M f16: 23040 bytes per token; 20 blocks of 16 tokens.
POOL = str(23040 * 16 * 21)
ARGS = ("--kv-cache-bytes", POOL, "--model.max-model-len", "300", "--threads", "1")

TURN1 = " ".join(f"Fact {i}: the {w} is {c}." for i, (w, c) in enumerate(
    [("sky", "blue"), ("grass", "green"), ("sun", "yellow"), ("snow", "white"), ("coal", "black"),
     ("rose", "red"), ("sea", "deep"), ("road", "long"), ("night", "dark"), ("fire", "hot"),
     ("ice", "cold"), ("stone", "hard"), ("silk", "soft"), ("lemon", "sour")]))
OTHER = [" ".join(f"Note {i}: item {k * 31 + i} weighs {i * 7 + k} grams." for i in range(14))
         for k in range(2)]
TURN2 = TURN1 + " Question: what colour is the grass? Answer:"


@pytest.fixture
def tier_dir():
    d = tempfile.mkdtemp(prefix="llmserve-kv-tier-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def sdk(d):
    return openai.OpenAI(base_url=d.url("/v1"), api_key="unused", max_retries=0, timeout=300)


def complete(d, prompt, **extra):
    r = sdk(d).completions.create(model=d.model, prompt=prompt, max_tokens=8, temperature=0,
                                  extra_body=extra or None)
    return r.choices[0].text, (r.usage.prompt_tokens_details.cached_tokens
                               if r.usage.prompt_tokens_details else 0)


def start(start_daemon, *args):
    d = start_daemon(*ARGS, *args)
    d.model = requests.get(d.url("/v1/models"), timeout=10).json()["data"][0]["id"]
    return d


def test_evicted_and_restarted_conversations_come_back_with_the_same_text(start_daemon, tier_dir):
    plain = start(start_daemon)
    expected, _ = complete(plain, TURN2)

    tiers = ("--kv-offload.disk-bytes", "64MiB", "--kv-offload.disk-path", tier_dir)
    d = start(start_daemon, *tiers)
    assert "KV tiers: disk " + tier_dir in d.logs()
    complete(d, TURN1)
    for o in OTHER:
        complete(d, o)
    before = d.scrape()
    text, cached = complete(d, TURN2)
    assert text == expected
    after = d.scrape()
    assert after.rose(before, "llmserve_kv_tier_hits_total", tier="disk") > 0
    assert cached > 0
    assert after.value("llmserve_kv_tier_bytes", tier="disk") > 0
    assert after.value("llmserve_kv_tier_budget_bytes", tier="disk") == 64 << 20
    d.stop()

    again = start(start_daemon, *tiers)
    assert again.scrape().value("llmserve_kv_tier_loaded_pages_total", tier="disk") > 0
    text, cached = complete(again, TURN2)
    assert text == expected
    assert cached > 0
    assert again.wait_metric("llmserve_kv_tier_hits_total", lambda v: v > 0, tier="disk") > 0


def evict_and_resume(d):
    complete(d, TURN1)
    for o in OTHER:
        complete(d, o)
    before = d.scrape()
    text, cached = complete(d, TURN2)
    return text, cached, before, d.scrape()


def test_host_tier_alone_restores_an_evicted_conversation(start_daemon):
    plain = start(start_daemon)
    expected, _ = complete(plain, TURN2)
    d = start(start_daemon, "--kv-offload.host-bytes", "32MiB")
    assert "KV tiers: host memory (RAM) budget 33554432 bytes" in d.logs()
    text, cached, before, after = evict_and_resume(d)
    assert text == expected
    assert cached > 0
    assert after.rose(before, "llmserve_kv_tier_hits_total", tier="host") > 0
    assert after.value("llmserve_kv_tier_budget_bytes", tier="host") == 32 << 20
    assert after.value("llmserve_kv_tier_bytes", tier="host") > 0
    assert not after.has("llmserve_kv_tier_bytes", tier="disk")


def test_full_host_tier_demotes_to_disk_and_a_restart_finds_host_pages(start_daemon, tier_dir):
    plain = start(start_daemon)
    expected, _ = complete(plain, TURN2)
    # 2 MiB holds 5 pages of 368640 bytes: the three conversations' ~27 pages overflow it.
    tiers = ("--kv-offload.host-bytes", "2MiB", "--kv-offload.disk-bytes", "64MiB",
             "--kv-offload.disk-path", tier_dir)
    d = start(start_daemon, *tiers)
    text, cached, before, after = evict_and_resume(d)
    assert text == expected
    assert cached > 0
    assert after.value("llmserve_kv_tier_demoted_pages_total") > 0
    assert after.value("llmserve_kv_tier_bytes", tier="host") <= 2 << 20
    assert after.value("llmserve_kv_tier_bytes", tier="disk") > 0
    hits = (after.rose(before, "llmserve_kv_tier_hits_total", tier="host") +
            after.rose(before, "llmserve_kv_tier_hits_total", tier="disk"))
    assert hits > 0
    assert d.stop() == 0
    assert "host-memory pages to disk at shutdown" in d.log_path.read_text()

    again = start(start_daemon, *tiers)
    assert again.scrape().value("llmserve_kv_tier_loaded_pages_total", tier="disk") > 0
    text, cached = complete(again, TURN2)
    assert text == expected
    assert cached > 0


def test_host_tier_smaller_than_a_page_stops_the_start_up():
    why = serve_available()
    if why:
        pytest.skip(why)
    r = subprocess.run([str(BIN), "serve", "--model", str(MODEL), *ARGS, "--http-port", "0",
                        "--kv-offload.host-bytes", "1KiB"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "kv_offload.host_bytes" in r.stdout + r.stderr


def test_cache_salt_isolates_tenants(start_daemon, tier_dir):
    tiers = ("--kv-offload.disk-bytes", "64MiB", "--kv-offload.disk-path", tier_dir)
    d = start(start_daemon, *tiers)
    complete(d, TURN1, cache_salt="tenant-a")
    d.stop()
    d = start(start_daemon, *tiers)
    text_b, cached_b = complete(d, TURN2, cache_salt="tenant-b")
    assert cached_b == 0
    assert d.scrape().value("llmserve_kv_tier_hits_total", tier="disk") == 0
    text_a, cached_a = complete(d, TURN2, cache_salt="tenant-a")
    assert cached_a > 0
    assert text_a == text_b


def test_bad_cache_salt_is_a_400_naming_the_field(daemon):
    for bad in ("", 5, ["x"]):
        r = requests.post(daemon.url("/v1/completions"),
                          json={"prompt": "hi", "max_tokens": 1, "cache_salt": bad}, timeout=30)
        assert r.status_code == 400, r.text
        assert "cache_salt" in r.json()["error"]["message"]
    r = requests.post(daemon.url("/v1/completions"),
                      json={"prompt": "hi", "max_tokens": 1, "cache_salt": None}, timeout=30)
    assert r.status_code == 200, r.text
