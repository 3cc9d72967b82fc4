"""The real SGLang Model Gateway (PyPI `smg` 1.13.0) over gRPC in front of two llmserve daemons
serving the tiny Qwen3 embedding model (tests/fixtures/tiny_qwen3_embed, made by
tests/reference/make_pooling_fixtures.py): smg tokenizes `/v1/embeddings` inputs with the
tokenizer the workers' GetTokenizer stream hands it (the folder's own files) and sends the ids to
a worker's `VllmEngine.Embed`; the vectors that come back are sentence-transformers' (cosine >=
0.9999), and both workers served some. One string per request: smg 1.13.0 joins a list input
into one text and passes neither `dimensions` nor `encoding_format` on (docs/EMBEDDINGS.md).

Run by `scripts/test.sh --routers` (the router packages of tests/requirements-routers.txt in
their own venv).
"""
import json
import math

import pytest
import requests
from conftest import ROOT, Daemon, start_daemons
from smg_gateway import Smg

EMBED = ROOT / "tests" / "fixtures" / "tiny_qwen3_embed"
EX = json.loads((EMBED / "expected.json").read_text())


def cosine(a, b):
    ab = sum(x * y for x, y in zip(a, b))
    return ab / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


@pytest.fixture(scope="module")
def workers():
    ds = start_daemons(lambda: Daemon(["--threads", "1", "--kv-cache-dtype", "f32",
                                       "--max-model-len", "512"], model=EMBED), 2)
    yield ds
    for d in ds:
        d.stop()


@pytest.fixture(scope="module")
def model(workers):
    return requests.get(workers[0].url("/v1/models"), timeout=10).json()["data"][0]["id"]


@pytest.fixture(scope="module")
def smg(workers, model):
    g = Smg(workers)
    try:
        g.wait_ready(model, path="/v1/embeddings", body={"model": model, "input": "hi"})
    except RuntimeError:
        g.stop()
        raise
    yield g
    g.stop()


def test_embeddings_through_smg_are_sentence_transformers(smg, workers, model):
    before = [w.metric("llmserve_pooling_requests_total") for w in workers]
    for _ in range(2):  # round robin: each text reaches each worker
        for text, want in zip(EX["texts"], EX["embeddings"]):
            r = requests.post(smg.url + "/v1/embeddings", json={"model": model, "input": text},
                              timeout=120)
            assert r.status_code == 200, r.text
            data = r.json()["data"]
            assert len(data) == 1 and len(data[0]["embedding"]) == 48
            assert cosine(data[0]["embedding"], want) >= 0.9999, text
    after = [w.metric("llmserve_pooling_requests_total") for w in workers]
    assert all(a > b for a, b in zip(after, before)), (before, after)
    assert sum(after) - sum(before) == 2 * len(EX["texts"])
