"""POST /v1/embeddings against sentence-transformers' vectors (tests/fixtures/tiny_qwen3_embed*,
made by tests/reference/make_pooling_fixtures.py), through the openai SDK unmodified: strings,
lists, token ids, float and base64, dimensions, usage, the model's query prompt; OpenAI error
shapes for bad input; generation and embeddings from one daemon at once."""
import base64
import json
import math
import threading
from pathlib import Path

import openai
import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
EMBED = ROOT / "tests" / "fixtures" / "tiny_qwen3_embed"
MEAN = ROOT / "tests" / "fixtures" / "tiny_qwen3_embed_mean"


def expected(folder):
    return json.loads((folder / "expected.json").read_text())


def cosine(a, b):
    ab = sum(x * y for x, y in zip(a, b))
    return ab / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


@pytest.fixture(scope="module")
def embedder(request):
    from conftest import Daemon, serve_available
    why = serve_available()
    if why:
        pytest.skip(why)
    d = Daemon(("--kv-cache-dtype", "f32", "--max-model-len", "512"), model=EMBED)
    try:
        d.wait_ready()
    except RuntimeError:
        d.stop()
        raise
    yield d
    d.stop()


@pytest.fixture(scope="module")
def sdk(embedder):
    return openai.OpenAI(base_url=embedder.url("/v1"), api_key="none", max_retries=0)


@pytest.fixture(scope="module")
def model_name(embedder):
    return requests.get(embedder.url("/v1/models"), timeout=10).json()["data"][0]["id"]


def test_sdk_default_base64_matches_sentence_transformers(sdk, model_name):
    ex = expected(EMBED)
    out = sdk.embeddings.create(model=model_name, input=ex["texts"])
    assert [d.index for d in out.data] == list(range(len(ex["texts"])))
    for d, want in zip(out.data, ex["embeddings"]):
        assert len(d.embedding) == 48
        assert cosine(d.embedding, want) >= 0.9999
    assert out.usage.prompt_tokens == sum(len(i) for i in ex["ids"])
    assert out.usage.total_tokens == out.usage.prompt_tokens


def test_float_format_single_string(sdk, model_name):
    ex = expected(EMBED)
    out = sdk.embeddings.create(model=model_name, input=ex["texts"][1], encoding_format="float")
    assert len(out.data) == 1
    assert cosine(out.data[0].embedding, ex["embeddings"][1]) >= 0.9999
    assert out.usage.prompt_tokens == len(ex["ids"][1])


def test_base64_is_little_endian_float32(embedder, model_name):
    ex = expected(EMBED)
    body = {"model": model_name, "input": ex["texts"][:2], "encoding_format": "base64"}
    r = requests.post(embedder.url("/v1/embeddings"), json=body, timeout=60)
    assert r.status_code == 200, r.text
    import struct
    for d, want in zip(r.json()["data"], ex["embeddings"]):
        raw = base64.b64decode(d["embedding"])
        vec = struct.unpack(f"<{len(raw) // 4}f", raw)
        assert cosine(vec, want) >= 0.9999


def test_token_id_inputs(sdk, model_name):
    ex = expected(EMBED)
    one = sdk.embeddings.create(model=model_name, input=ex["ids"][3], encoding_format="float")
    assert cosine(one.data[0].embedding, ex["embeddings"][3]) >= 0.9999
    many = sdk.embeddings.create(model=model_name, input=ex["ids"][:4], encoding_format="float")
    for d, want in zip(many.data, ex["embeddings"][:4]):
        assert cosine(d.embedding, want) >= 0.9999


def test_query_prompt_by_name(sdk, model_name):
    ex = expected(EMBED)
    out = sdk.embeddings.create(model=model_name, input=ex["texts"], encoding_format="float",
                                extra_body={"prompt_name": "query"})
    for d, want in zip(out.data, ex["query_embeddings"]):
        assert cosine(d.embedding, want) >= 0.9999
    assert out.usage.prompt_tokens == sum(len(i) for i in ex["query_ids"])


def test_dimensions_cut_then_normalised(sdk, model_name):
    ex = expected(EMBED)
    out = sdk.embeddings.create(model=model_name, input=ex["texts"][0], dimensions=16,
                                encoding_format="float")
    v = out.data[0].embedding
    assert len(v) == 16
    assert abs(sum(x * x for x in v) - 1.0) < 1e-5
    assert cosine(v, ex["embeddings"][0][:16]) >= 0.9999


@pytest.mark.parametrize("body,param", [
    ({"input": ""}, "input"),
    ({"input": []}, "input"),
    ({"input": [[]]}, "input"),
    ({"input": [1, 2, 100000]}, "input"),
    ({"input": [{"text": "x"}]}, "input"),
    ({"input": 7.5}, "input"),
    ({}, "input"),
    ({"input": "x", "dimensions": 0}, "dimensions"),
    ({"input": "x", "dimensions": 49}, "dimensions"),
    ({"input": "x", "encoding_format": "int8"}, "encoding_format"),
    ({"input": "x", "prompt_name": "nope"}, "prompt_name"),
])
def test_bad_input_is_an_openai_400(embedder, model_name, body, param):
    r = requests.post(embedder.url("/v1/embeddings"), json={"model": model_name, **body},
                      timeout=30)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error"
    assert err["param"] == param
    assert err["message"]


def test_bad_input_through_the_sdk_raises(sdk, model_name):
    with pytest.raises(openai.BadRequestError):
        sdk.embeddings.create(model=model_name, input="x", dimensions=999)


def test_too_long_input_is_refused(embedder, model_name):
    r = requests.post(embedder.url("/v1/embeddings"),
                      json={"model": model_name, "input": [5] * 3000}, timeout=30)
    assert r.status_code == 400, r.text
    assert "tokens" in r.json()["error"]["message"]


def test_generation_and_embeddings_from_one_daemon(embedder, sdk, model_name):
    ex = expected(EMBED)
    results = {}

    def generate():
        r = requests.post(embedder.url("/v1/completions"),
                          json={"model": model_name, "prompt": "hello", "max_tokens": 16,
                                "ignore_eos": True}, timeout=120)
        results["gen"] = r

    t = threading.Thread(target=generate)
    t.start()
    out = sdk.embeddings.create(model=model_name, input=ex["texts"] * 8, encoding_format="float")
    t.join()
    assert results["gen"].status_code == 200, results["gen"].text
    assert results["gen"].json()["usage"]["completion_tokens"] == 16
    for i, d in enumerate(out.data):
        assert cosine(d.embedding, ex["embeddings"][i % len(ex["texts"])]) >= 0.9999


def test_mean_pooling_model(start_daemon):
    ex = expected(MEAN)
    d = start_daemon("--kv-cache-dtype", "f32", "--max-model-len", "512", model=MEAN)
    name = requests.get(d.url("/v1/models"), timeout=10).json()["data"][0]["id"]
    sdk = openai.OpenAI(base_url=d.url("/v1"), api_key="none", max_retries=0)
    out = sdk.embeddings.create(model=name, input=ex["texts"], encoding_format="float")
    for got, want in zip(out.data, ex["embeddings"]):
        assert len(got.embedding) == 64
        assert cosine(got.embedding, want) >= 0.9999


@pytest.fixture(scope="module")
def vllm_stub(embedder):
    grpc = pytest.importorskip("grpc")
    import grpc_protos
    pb, pb_grpc = grpc_protos.vllm_engine()
    channel = grpc.insecure_channel(embedder.grpc_target)
    yield pb, pb_grpc.VllmEngineStub(channel), grpc
    channel.close()


def test_grpc_embed_matches_sentence_transformers(vllm_stub):
    pb, stub, _ = vllm_stub
    ex = expected(EMBED)
    for ids, want in zip(ex["ids"], ex["embeddings"]):
        resp = stub.Embed(pb.EmbedRequest(request_id="e1",
                                          tokenized=pb.TokenizedInput(input_ids=ids)), timeout=60)
        assert resp.embedding_dim == 48
        assert resp.prompt_tokens == len(ids)
        assert cosine(list(resp.embedding), want) >= 0.9999


@pytest.mark.parametrize("ids", [[], [1, 2, 100000]])
def test_grpc_embed_bad_ids_are_invalid_argument(vllm_stub, ids):
    pb, stub, grpc = vllm_stub
    with pytest.raises(grpc.RpcError) as e:
        stub.Embed(pb.EmbedRequest(tokenized=pb.TokenizedInput(input_ids=ids)), timeout=30)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "input_ids" in e.value.details()


def st_cosines(query_index, doc_indices):
    emb = expected(EMBED)["embeddings"]
    return [cosine(emb[query_index], emb[i]) for i in doc_indices]


@pytest.mark.parametrize("path", ["/v1/rerank", "/v2/rerank", "/rerank"])
def test_rerank_with_an_embedding_model_is_the_cosine(embedder, model_name, path):
    ex = expected(EMBED)
    docs = ex["texts"][1:]
    want = st_cosines(0, range(1, len(ex["texts"])))
    r = requests.post(embedder.url(path), json={"model": model_name, "query": ex["texts"][0],
                                                "documents": docs, "top_n": 4}, timeout=60)
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    order = sorted(range(len(docs)), key=lambda i: -want[i])[:4]
    assert [x["index"] for x in results] == order
    for x in results:
        assert abs(x["relevance_score"] - want[x["index"]]) < 1e-3
        assert x["document"]["text"] == docs[x["index"]]
    assert r.json()["usage"]["total_tokens"] == sum(len(i) for i in ex["ids"])


def test_rerank_cohere_documents_and_no_documents_back(embedder, model_name):
    ex = expected(EMBED)
    docs = [{"text": t} for t in ex["texts"][1:4]]
    r = requests.post(embedder.url("/v2/rerank"),
                      json={"model": model_name, "query": ex["texts"][0], "documents": docs,
                            "return_documents": False}, timeout=60)
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert len(results) == 3 and all("document" not in x for x in results)
    want = st_cosines(0, [1, 2, 3])
    assert [x["index"] for x in results] == sorted(range(3), key=lambda i: -want[i])


def test_score_one_against_many_and_pairs(embedder, model_name):
    ex = expected(EMBED)
    t = ex["texts"]
    r = requests.post(embedder.url("/score"),
                      json={"model": model_name, "text_1": t[0], "text_2": t[1:4]}, timeout=60)
    assert r.status_code == 200, r.text
    got = [d["score"] for d in r.json()["data"]]
    assert all(abs(a - b) < 1e-3 for a, b in zip(got, st_cosines(0, [1, 2, 3])))
    r = requests.post(embedder.url("/score"),
                      json={"model": model_name, "text_1": t[0:2], "text_2": t[2:4]}, timeout=60)
    got = [d["score"] for d in r.json()["data"]]
    emb = ex["embeddings"]
    assert abs(got[0] - cosine(emb[0], emb[2])) < 1e-3
    assert abs(got[1] - cosine(emb[1], emb[3])) < 1e-3


@pytest.mark.parametrize("path,body,param", [
    ("/v1/rerank", {"documents": ["a"]}, "query"),
    ("/v1/rerank", {"query": "q", "documents": []}, "documents"),
    ("/v1/rerank", {"query": "q", "documents": [3]}, "documents"),
    ("/v1/rerank", {"query": "q", "documents": ["a"], "top_n": -1}, "top_n"),
    ("/score", {"text_1": ["a", "b"], "text_2": ["c", "d", "e"]}, "text_1"),
    ("/score", {"text_1": "a"}, "text_2"),
])
def test_rerank_and_score_bad_input(embedder, model_name, path, body, param):
    r = requests.post(embedder.url(path), json={"model": model_name, **body}, timeout=30)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == param
