"""A Qwen3-Reranker served from its stock layout (tests/fixtures/tiny_qwen3_reranker, made by
tests/reference/make_rerank_fixtures.py): /v1/rerank, /v2/rerank, /rerank and /score give the
scores transformers computes the model card's way (P("yes") at the last position), within 1e-3
and in the same order, from the HF folder and from the GGUF in llama.cpp's converter layout;
/v1/embeddings and the Embed RPC are refused with a message that says why."""
import json
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
RERANKER = ROOT / "tests" / "fixtures" / "tiny_qwen3_reranker"
EX = json.loads((RERANKER / "expected.json").read_text())


def start(model):
    from conftest import Daemon, serve_available
    why = serve_available()
    if why:
        pytest.skip(why)
    d = Daemon(("--kv-cache-dtype", "f32", "--max-model-len", "512"), model=model)
    try:
        d.wait_ready()
    except RuntimeError:
        d.stop()
        raise
    return d


@pytest.fixture(scope="module", params=["folder", "gguf"])
def reranker(request):
    d = start(RERANKER if request.param == "folder" else RERANKER / "model.gguf")
    yield d
    d.stop()


def want(group):
    return [EX["pairs"][i]["score"] for i in group["pairs"]]


@pytest.mark.parametrize("path", ["/v1/rerank", "/v2/rerank", "/rerank"])
def test_rerank_is_the_models_yes_no_score(reranker, path):
    for group in EX["rerank"]:
        docs, scores = group["documents"], want(group)
        r = requests.post(reranker.url(path), json={"query": group["query"], "documents": docs},
                          timeout=120)
        assert r.status_code == 200, r.text
        results = r.json()["results"]
        assert [x["index"] for x in results] == sorted(range(len(docs)), key=lambda i: -scores[i])
        for x in results:
            assert abs(x["relevance_score"] - scores[x["index"]]) < 1e-3
            assert x["document"]["text"] == docs[x["index"]]
        tokens = sum(len(EX["pairs"][i]["ids"]) for i in group["pairs"])
        assert r.json()["usage"]["total_tokens"] == tokens


def test_rerank_top_n_and_instruction(reranker):
    group = EX["rerank"][0]
    r = requests.post(reranker.url("/v2/rerank"),
                      json={"query": group["query"], "documents": group["documents"], "top_n": 2,
                            "return_documents": False}, timeout=120)
    assert r.status_code == 200, r.text
    scores = want(group)
    results = r.json()["results"]
    assert [x["index"] for x in results] == sorted(range(len(scores)), key=lambda i: -scores[i])[:2]
    assert all("document" not in x for x in results)
    custom = [EX["pairs"][i] for i in EX["custom_pairs"]]
    r = requests.post(reranker.url("/v1/rerank"),
                      json={"query": custom[0]["query"], "documents": [p["document"] for p in custom],
                            "instruction": EX["custom_instruction"]}, timeout=120)
    assert r.status_code == 200, r.text
    for x in r.json()["results"]:
        assert abs(x["relevance_score"] - custom[x["index"]]["score"]) < 1e-3


def test_score_one_against_many_and_pairs(reranker):
    group = EX["rerank"][1]
    r = requests.post(reranker.url("/score"),
                      json={"text_1": group["query"], "text_2": group["documents"]}, timeout=120)
    assert r.status_code == 200, r.text
    got = [d["score"] for d in r.json()["data"]]
    assert all(abs(a - b) < 1e-3 for a, b in zip(got, want(group), strict=True))
    pairs = [EX["pairs"][0], EX["pairs"][len(EX["rerank"][0]["pairs"]) + 1]]
    r = requests.post(reranker.url("/v1/score"),
                      json={"text_1": [p["query"] for p in pairs],
                            "text_2": [p["document"] for p in pairs]}, timeout=120)
    assert r.status_code == 200, r.text
    got = [d["score"] for d in r.json()["data"]]
    assert all(abs(a - p["score"]) < 1e-3 for a, p in zip(got, pairs, strict=True))


def test_embeddings_on_a_reranker_are_refused(reranker):
    r = requests.post(reranker.url("/v1/embeddings"), json={"input": "hello"}, timeout=30)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error" and err["param"] == "model"
    assert "reranker" in err["message"] and "/v1/rerank" in err["message"]


def test_grpc_embed_on_a_reranker_is_refused(reranker):
    grpc = pytest.importorskip("grpc")
    import grpc_protos
    pb, pb_grpc = grpc_protos.vllm_engine()
    with grpc.insecure_channel(reranker.grpc_target) as channel:
        with pytest.raises(grpc.RpcError) as e:
            pb_grpc.VllmEngineStub(channel).Embed(
                pb.EmbedRequest(tokenized=pb.TokenizedInput(input_ids=[5, 6, 7])), timeout=30)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "reranker" in e.value.details()


def test_instruction_needs_a_reranker(start_daemon):
    d = start_daemon("--kv-cache-dtype", "f32", "--max-model-len", "512",
                     model=ROOT / "tests" / "fixtures" / "tiny_qwen3_embed")
    r = requests.post(d.url("/v1/rerank"), json={"query": "q", "documents": ["a"],
                                                 "instruction": "x"}, timeout=60)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == "instruction"
