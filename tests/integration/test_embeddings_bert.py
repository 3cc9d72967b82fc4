"""A BERT embedder served by the daemon (tests/fixtures/tiny_bert*, made by
tests/reference/make_bert_fixtures.py) against sentence-transformers' vectors, through the
openai SDK unmodified: texts tokenized by our WordPiece, from the HF folder and from the GGUF;
rerank and score as the cosine of sentence-transformers' vectors; generation refused with an
OpenAI-shaped 400."""
import json
import math
from pathlib import Path

import openai
import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
BERT = ROOT / "tests" / "fixtures" / "tiny_bert"


def expected():
    return json.loads((BERT / "expected.json").read_text())


def cosine(a, b):
    ab = sum(x * y for x, y in zip(a, b))
    return ab / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


@pytest.fixture(scope="module", params=["folder", "gguf"])
def bert(request):
    from conftest import Daemon, serve_available
    why = serve_available()
    if why:
        pytest.skip(why)
    model = BERT if request.param == "folder" else BERT / "model.gguf"
    d = Daemon(("--kv-cache-dtype", "f32"), model=model)
    try:
        d.wait_ready()
    except RuntimeError:
        d.stop()
        raise
    yield d
    d.stop()


@pytest.fixture(scope="module")
def model_name(bert):
    return requests.get(bert.url("/v1/models"), timeout=10).json()["data"][0]["id"]


def test_sdk_matches_sentence_transformers(bert, model_name):
    ex = expected()
    sdk = openai.OpenAI(base_url=bert.url("/v1"), api_key="none", max_retries=0)
    out = sdk.embeddings.create(model=model_name, input=ex["texts"])
    for d, want in zip(out.data, ex["embeddings"]):
        assert len(d.embedding) == 64
        assert cosine(d.embedding, want) >= 0.9999
    assert out.usage.prompt_tokens == sum(len(i) for i in ex["ids"])


def test_rerank_and_score_are_the_cosine(bert, model_name):
    ex = expected()
    emb, docs = ex["embeddings"], ex["texts"][1:]
    want = [cosine(emb[0], emb[i]) for i in range(1, len(emb))]
    r = requests.post(bert.url("/v1/rerank"), json={"model": model_name, "query": ex["texts"][0],
                                                    "documents": docs}, timeout=60)
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert [x["index"] for x in results] == sorted(range(len(docs)), key=lambda i: -want[i])
    for x in results:
        assert abs(x["relevance_score"] - want[x["index"]]) < 1e-3
    r = requests.post(bert.url("/score"), json={"model": model_name, "text_1": ex["texts"][0],
                                                "text_2": docs[:3]}, timeout=60)
    assert r.status_code == 200, r.text
    assert all(abs(d["score"] - w) < 1e-3 for d, w in zip(r.json()["data"], want))


def test_generation_is_refused_as_an_openai_400(bert, model_name):
    r = requests.post(bert.url("/v1/completions"),
                      json={"model": model_name, "prompt": "hello", "max_tokens": 4}, timeout=60)
    assert r.status_code == 400, r.text
    assert "encoder" in r.json()["error"]["message"]
    too_long = " ".join(["hello"] * 200)  # the position table holds 128
    r = requests.post(bert.url("/v1/embeddings"), json={"model": model_name, "input": too_long},
                      timeout=60)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == "input"
