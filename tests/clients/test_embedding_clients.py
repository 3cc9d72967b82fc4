"""LangChain's OpenAIEmbeddings (langchain-openai, unmodified) against llmserve serving the tiny
Qwen3 embedding model (tests/fixtures/tiny_qwen3_embed): embed_documents and embed_query give
sentence-transformers' vectors (cosine >= 0.9999). check_embedding_ctx_length=False: otherwise
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
