"""EmbeddingGemma served by the daemon (tests/fixtures/tiny_embeddinggemma, made by
tests/reference/make_embeddinggemma_fixture.py) against sentence-transformers' vectors, through
the openai SDK unmodified: texts tokenized by the daemon, the query / document prompts chosen
with prompt_name, from the HF folder; token ids into the GGUF llama.cpp's converter wrote;
generation refused with an OpenAI-shaped 400."""
import json
import math
from pathlib import Path

import openai
import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
GEMMA = ROOT / "tests" / "fixtures" / "tiny_embeddinggemma"


def expected():
    return json.loads((GEMMA / "expected.json").read_text())


def cosine(a, b):
    ab = sum(x * y for x, y in zip(a, b))
    return ab / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def start(model):
    from conftest import Daemon, serve_available
    why = serve_available()
    if why:
        pytest.skip(why)
    d = Daemon(("--kv-cache-dtype", "f32"), model=model)
    try:
        d.wait_ready()
    except RuntimeError:
        d.stop()
        raise
    return d


@pytest.fixture(scope="module")
def folder():
    d = start(GEMMA)
    yield d
    d.stop()


@pytest.fixture(scope="module")
def gguf():
    d = start(GEMMA / "model.gguf")
    yield d
    d.stop()


def served_name(d):
    return requests.get(d.url("/v1/models"), timeout=10).json()["data"][0]["id"]


@pytest.mark.parametrize("prompt_name", [None, "query", "document"])
def test_sdk_matches_sentence_transformers(folder, prompt_name):
    ex = expected()
    sdk = openai.OpenAI(base_url=folder.url("/v1"), api_key="none", max_retries=0)
    extra = {"prompt_name": prompt_name} if prompt_name else None
    out = sdk.embeddings.create(model=served_name(folder), input=ex["texts"], extra_body=extra)
    prefix = f"{prompt_name}_" if prompt_name else ""
    for d, want in zip(out.data, ex[prefix + "embeddings"]):
        assert len(d.embedding) == 64
        assert cosine(d.embedding, want) >= 0.9999
    assert out.usage.prompt_tokens == sum(len(i) for i in ex[prefix + "ids"])


def test_matryoshka_dimensions_cut_then_normalise(folder):
    ex = expected()
    r = requests.post(folder.url("/v1/embeddings"),
                      json={"input": ex["texts"][1], "dimensions": 16, "prompt_name": "query"},
                      timeout=60)
    assert r.status_code == 200, r.text
    got = r.json()["data"][0]["embedding"]
    want = ex["query_embeddings"][1][:16]
    norm = math.sqrt(sum(x * x for x in want))
    assert len(got) == 16
    assert cosine(got, [x / norm for x in want]) >= 0.9999
    assert abs(math.sqrt(sum(x * x for x in got)) - 1.0) < 1e-4


def test_gguf_token_ids_match_sentence_transformers(gguf):
    ex = expected()
    r = requests.post(gguf.url("/v1/embeddings"), json={"input": ex["ids"]}, timeout=60)
    assert r.status_code == 200, r.text
    for d, want in zip(r.json()["data"], ex["embeddings"]):
        assert cosine(d["embedding"], want) >= 0.9999


def test_generation_and_unknown_prompt_are_openai_400s(folder):
    name = served_name(folder)
    r = requests.post(folder.url("/v1/completions"),
                      json={"model": name, "prompt": "hello", "max_tokens": 4}, timeout=60)
    assert r.status_code == 400, r.text
    assert "bidirectional" in r.json()["error"]["message"]
    r = requests.post(folder.url("/v1/embeddings"),
                      json={"model": name, "input": "hello", "prompt_name": "nope"}, timeout=60)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == "prompt_name"
