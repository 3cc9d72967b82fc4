"""The daemon through the official `openai` Python SDK."""
import requests


def test_models_lists_the_served_model(client, model_id):
    models = client.models.list()
    assert [m.id for m in models.data] == [model_id]


def test_completion(client, model_id):
    r = client.completions.create(model=model_id, prompt="The capital of France is",
                                  max_tokens=8, temperature=0)
    assert r.object == "text_completion"
    assert len(r.choices) == 1
    assert r.choices[0].finish_reason in ("stop", "length")
    assert r.usage.prompt_tokens > 0
    assert 0 < r.usage.completion_tokens <= 8
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_chat_completion(client, model_id):
    r = client.chat.completions.create(
        model=model_id, messages=[{"role": "user", "content": "Say hello."}], max_tokens=16,
        temperature=0)
    assert r.object == "chat.completion"
    assert r.choices[0].message.role == "assistant"
    assert isinstance(r.choices[0].message.content, str)
    assert r.choices[0].finish_reason in ("stop", "length")


def test_chat_streaming_with_usage(client, model_id):
    stream = client.chat.completions.create(
        model=model_id, messages=[{"role": "user", "content": "Count to five."}], max_tokens=12,
        temperature=0, stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] in ("stop", "length")
    assert chunks[-1].choices == []
    assert chunks[-1].usage.completion_tokens > 0
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    # Greedy: the same text as the non-streaming call.
    whole = client.chat.completions.create(
        model=model_id, messages=[{"role": "user", "content": "Count to five."}], max_tokens=12,
        temperature=0)
    assert text == whole.choices[0].message.content


def test_completion_streaming(client, model_id):
    stream = client.completions.create(model=model_id, prompt="Once upon a time", max_tokens=10,
                                       temperature=0, stream=True)
    chunks = list(stream)
    assert all(c.object == "text_completion" for c in chunks)
    assert chunks[-1].choices[0].finish_reason in ("stop", "length")
    assert "".join(c.choices[0].text for c in chunks)


def test_logprobs_completion_and_chat(client, model_id):
    r = client.completions.create(model=model_id, prompt="1, 2, 3,", max_tokens=4, temperature=0,
                                  logprobs=3)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs)
    assert all(v <= 0 for v in lp.token_logprobs)
    # Each position lists exactly its top 3 (the vocabulary is far larger), most likely first,
    # the sampled (greedy) token among them with the same logprob.
    for tok, tok_lp, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
        assert len(top) == 3, top
        assert all(v <= 0 for v in top.values())
        assert tok in top and abs(top[tok] - tok_lp) < 1e-4
        assert abs(max(top.values()) - tok_lp) < 1e-4  # greedy: the sampled token is the best
    c = client.chat.completions.create(model=model_id, messages=[{"role": "user", "content": "Hi"}],
                                       max_tokens=4, temperature=0, logprobs=True, top_logprobs=2)
    content = c.choices[0].logprobs.content
    assert len(content) == c.usage.completion_tokens
    for t in content:
        assert len(t.top_logprobs) == 2
        assert t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob
        assert t.top_logprobs[0].token == t.token
        assert abs(t.top_logprobs[0].logprob - t.logprob) < 1e-4
        assert t.logprob <= 0 and t.bytes and all(0 <= b < 256 for b in t.bytes)


def test_n_samples_are_distinct_and_equal_their_seeds_run_singly(client, model_id):
    # Sample i of a request seeded s draws as a single request seeded s + i (README, sampling).
    kw = dict(model=model_id, prompt="Write a list of random words:", max_tokens=24,
              temperature=1.0, top_p=1.0)
    r = client.completions.create(n=3, seed=7, **kw)
    assert sorted(c.index for c in r.choices) == [0, 1, 2]
    texts = [c.text for c in sorted(r.choices, key=lambda c: c.index)]
    assert len(set(texts)) == 3, texts
    singles = [client.completions.create(seed=7 + i, **kw) for i in range(3)]
    assert texts == [s.choices[0].text for s in singles]
    assert r.usage.completion_tokens == sum(s.usage.completion_tokens for s in singles)


def test_seed_reproducibility(client, model_id):
    kw = dict(model=model_id, prompt="A random story:", max_tokens=16, temperature=1.0, seed=1234)
    a = client.completions.create(**kw).choices[0].text
    b = client.completions.create(**kw).choices[0].text
    assert a == b


def test_request_id_header_and_cancel_unknown(daemon):
    r = requests.post(daemon.url("/v1/completions"), json={"prompt": "hi", "max_tokens": 1},
                      headers={"X-Request-Id": "it-req-1"}, timeout=60)
    assert r.status_code == 200
    assert r.headers["X-Request-Id"] == "it-req-1"
    d = requests.delete(daemon.url("/v1/requests/it-req-1"), timeout=10)
    assert d.status_code == 404
    assert "error" in d.json()


def test_tokenize_detokenize_version_health(daemon):
    t = requests.post(daemon.url("/tokenize"), json={"prompt": "Hello world"}, timeout=10).json()
    assert t["count"] == len(t["tokens"]) > 0
    d = requests.post(daemon.url("/detokenize"), json={"tokens": t["tokens"]}, timeout=10).json()
    assert "Hello world" in d["prompt"]
    chat = requests.post(daemon.url("/tokenize"),
                         json={"messages": [{"role": "user", "content": "hi"}]}, timeout=10)
    assert chat.status_code == 200 and chat.json()["count"] > 2
    assert requests.get(daemon.url("/version"), timeout=10).json()["version"]
    assert requests.get(daemon.url("/health"), timeout=10).status_code == 200
    assert requests.get(daemon.url("/ready"), timeout=10).status_code == 200
