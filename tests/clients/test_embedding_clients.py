"""LangChain's OpenAIEmbeddings (langchain-openai) and LlamaIndex's OpenAIEmbedding
(llama-index-embeddings-openai), unmodified, against llmserve serving the tiny Qwen3 embedding
model (tests/fixtures/tiny_qwen3_embed): their vectors are sentence-transformers' (cosine >=
0.9999); the cohere SDK's ClientV2.rerank against it (the cosine) and against the tiny
Qwen3-Reranker (its yes/no score, as transformers computes it). check_embedding_ctx_length=False: otherwise
the client tokenizes with OpenAI's tiktoken and sends those ids, which belong to another vocab
(as with any non-OpenAI server)."""
import json
import math
import signal

import pytest
from conftest import ROOT, Daemon, serve_available
from langchain_openai import OpenAIEmbeddings

EMBED = ROOT / "tests" / "fixtures" / "tiny_qwen3_embed"


def cosine(a, b):
    ab = sum(x * y for x, y in zip(a, b))
    return ab / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


@pytest.fixture(scope="module")
def embed_daemon():
    why = serve_available()
    if why:
        pytest.skip(why)
    d = Daemon(("--kv-cache-dtype", "f32", "--max-model-len", "512"), model=EMBED)
    try:
        d.wait_ready()
    except RuntimeError:
        d.stop(signal.SIGKILL)
        raise
    yield d
    d.stop()


def test_langchain_openai_embeddings(embed_daemon):
    ex = json.loads((EMBED / "expected.json").read_text())
    emb = OpenAIEmbeddings(model="tiny_qwen3_embed", base_url=embed_daemon.url("/v1"),
                           api_key="unused", check_embedding_ctx_length=False, max_retries=0)
    docs = emb.embed_documents(ex["texts"])
    assert len(docs) == len(ex["texts"])
    for got, want in zip(docs, ex["embeddings"]):
        assert cosine(got, want) >= 0.9999
    q = emb.embed_query(ex["texts"][2])
    assert cosine(q, ex["embeddings"][2]) >= 0.9999


# LlamaIndex's OpenAIEmbedding (llama-index-embeddings-openai, unmodified). It accepts only
# OpenAI's model names (it maps each to its query / text engines), so the daemon serves the
# model under one of them, as a user would: --server.served-model-name.
@pytest.fixture(scope="module")
def openai_named_daemon():
    why = serve_available()
    if why:
        pytest.skip(why)
    d = Daemon(("--kv-cache-dtype", "f32", "--max-model-len", "512",
                "--server.served-model-name", "text-embedding-3-small"), model=EMBED)
    try:
        d.wait_ready()
    except RuntimeError:
        d.stop(signal.SIGKILL)
        raise
    yield d
    d.stop()


def test_llamaindex_openai_embedding(openai_named_daemon):
    from llama_index.embeddings.openai import OpenAIEmbedding
    ex = json.loads((EMBED / "expected.json").read_text())
    emb = OpenAIEmbedding(model="text-embedding-3-small", api_base=openai_named_daemon.url("/v1"),
                          api_key="unused", max_retries=0, embed_batch_size=3)
    docs = emb.get_text_embedding_batch(ex["texts"])
    assert len(docs) == len(ex["texts"])
    for got, want in zip(docs, ex["embeddings"]):
        assert cosine(got, want) >= 0.9999
    assert cosine(emb.get_query_embedding(ex["texts"][2]), ex["embeddings"][2]) >= 0.9999
    # dimensions (Matryoshka): the SDK sends it, the daemon cuts and renormalises.
    short = OpenAIEmbedding(model="text-embedding-3-small", dimensions=16, max_retries=0,
                            api_base=openai_named_daemon.url("/v1"), api_key="unused")
    v = short.get_text_embedding(ex["texts"][1])
    full = ex["embeddings"][1][:16]
    assert len(v) == 16 and cosine(v, full) >= 0.9999


# The cohere SDK's ClientV2.rerank (unmodified) against base_url: POST /v2/rerank in Cohere's
# shape. With the embedding model the score is the cosine of sentence-transformers' vectors.
def test_cohere_rerank_with_an_embedding_model(embed_daemon):
    import cohere
    ex = json.loads((EMBED / "expected.json").read_text())
    co = cohere.ClientV2(api_key="unused", base_url=embed_daemon.url(""))
    docs = ex["texts"][1:]
    out = co.rerank(model="tiny_qwen3_embed", query=ex["texts"][0], documents=docs, top_n=3)
    want = [cosine(ex["embeddings"][0], e) for e in ex["embeddings"][1:]]
    assert [r.index for r in out.results] == sorted(range(len(docs)), key=lambda i: -want[i])[:3]
    for r in out.results:
        assert abs(r.relevance_score - want[r.index]) < 1e-3


# ... and with a Qwen3-Reranker, its own yes/no score (transformers, the model card's way).
def test_cohere_rerank_with_a_reranker():
    import cohere
    why = serve_available()
    if why:
        pytest.skip(why)
    folder = ROOT / "tests" / "fixtures" / "tiny_qwen3_reranker"
    ex = json.loads((folder / "expected.json").read_text())
    d = Daemon(("--kv-cache-dtype", "f32", "--max-model-len", "512"), model=folder)
    try:
        d.wait_ready()
        group = ex["rerank"][0]
        want = [ex["pairs"][i]["score"] for i in group["pairs"]]
        co = cohere.ClientV2(api_key="unused", base_url=d.url(""))
        out = co.rerank(model="tiny_qwen3_reranker", query=group["query"],
                        documents=group["documents"])
        assert [r.index for r in out.results] == sorted(range(len(want)), key=lambda i: -want[i])
        for r in out.results:
            assert abs(r.relevance_score - want[r.index]) < 1e-3
    finally:
        d.stop(signal.SIGKILL)
