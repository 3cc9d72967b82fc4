"""Prompt scoring's size is bounded (issue 41 item 7): n x prompt tokens x (top-N + 1) logprob
entries past server.max_prompt_logprob_entries get a 400 naming the field, and the daemon serves
on; a large allowed request comes back whole, every choice with the same prompt logprobs.
"""
import requests


def post(daemon, body, timeout=600):
    return requests.post(daemon.url("/v1/completions"), json=body, timeout=timeout)


def test_the_issues_scoring_request_gets_a_400_naming_the_field(daemon):
    # The issue's request: 16 x 8180 x 21 = 2,748,480 entries (a 187 MB response before).
    body = {"prompt": [1 + i % 1000 for i in range(8180)], "max_tokens": 0,
            "prompt_logprobs": 20, "n": 16}
    r = post(daemon, body)
    assert r.status_code == 400, r.text[:300]
    err = r.json()["error"]
    assert err["param"] == "prompt_logprobs"
    assert "2748480" in err["message"] and "max_prompt_logprob_entries" in err["message"]
    # The daemon still serves.
    r = post(daemon, {"prompt": "Hello", "max_tokens": 2, "temperature": 0})
    assert r.status_code == 200, r.text


def test_a_lower_limit_is_applied(start_daemon):
    d = start_daemon("--max-prompt-logprob-entries", "1000")
    ids = [1 + i for i in range(10)]
    r = post(d, {"prompt": ids, "max_tokens": 0, "prompt_logprobs": 19, "n": 5})  # 1000
    assert r.status_code == 200, r.text[:300]
    r = post(d, {"prompt": ids, "max_tokens": 0, "prompt_logprobs": 20, "n": 5})  # 1050
    assert r.status_code == 400, r.text[:300]
    assert r.json()["error"]["param"] == "prompt_logprobs"


def test_a_large_allowed_scoring_request_comes_back_whole(daemon):
    # 16 x 3000 x 21 = 1,008,000 entries: under the default limit; sent in pieces (chunked).
    ids = [1 + (i * 7) % 5000 for i in range(3000)]
    r = post(daemon, {"prompt": ids, "max_tokens": 0, "prompt_logprobs": 20, "n": 16})
    assert r.status_code == 200, r.text[:300]
    choices = r.json()["choices"]
    assert len(choices) == 16
    first = choices[0]["prompt_logprobs"]
    assert len(first) == 3000 and first[0] is None
    for pos, token in zip(first[1:], ids[1:]):
        assert str(token) in pos
        assert len(pos) in (20, 21)  # the prompt token and the top 20 (it may be among them)
    assert all(c["prompt_logprobs"] == first for c in choices[1:])
