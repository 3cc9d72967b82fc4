"""Prompt logprobs through the daemon (completions `echo` + `logprobs`, vLLM's `prompt_logprobs`
on both endpoints, gRPC `prompt_logprobs`) against HF transformers' log-softmax over the same
prompt ids (tests/fixtures/logits/smollm2_prompt_logprobs.json, made by
tests/reference/make_prompt_logprobs_fixtures.py), and the bad requests around them.

Bound: the model test holds our logits within 0.015 of transformers' (README), so a log-softmax
value moves by at most about twice that (measured here: at most 0.008 over these prompts).
"""
import json
import math

import pytest
import requests

from conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "logits" / "smollm2_prompt_logprobs.json"
LOGPROB_TOL = 0.02
MARGIN = 0.1  # top-1 ids are compared where transformers' best two differ by more than this


@pytest.fixture(scope="module")
def fixture():
    return json.loads(FIXTURE.read_text())


def post(daemon, path, body):
    return requests.post(daemon.url(path), json=body, timeout=120)


def check_positions(ref_positions, got_logprobs, got_tokens=None, got_tops=None):
    assert len(got_logprobs) == len(ref_positions)
    worst = 0.0
    for i, ref in enumerate(ref_positions):
        worst = max(worst, abs(got_logprobs[i] - ref["logprob"]))
        if got_tops is not None and ref["top_logprobs"][0] - ref["top_logprobs"][1] > MARGIN:
            assert got_tops[i][0] == ref["top_ids"][0], f"position {i + 1}"
    assert worst <= LOGPROB_TOL, f"largest logprob difference {worst:.4f}"
    return worst


def test_echo_with_logprobs_scores_the_prompt_like_transformers(daemon, fixture):
    for case in fixture["prompts"]:
        ids = case["prompt_ids"]
        r = post(daemon, "/v1/completions",
                 {"prompt": ids, "max_tokens": 0, "echo": True, "logprobs": 3, "temperature": 0})
        assert r.status_code == 200, r.text
        choice = r.json()["choices"][0]
        lp = choice["logprobs"]
        assert len(lp["tokens"]) == len(ids)
        assert lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None
        assert lp["text_offset"][0] == 0
        assert lp["text_offset"] == sorted(lp["text_offset"])
        assert all(1 <= len(t) <= 3 for t in lp["top_logprobs"][1:])
        check_positions(case["positions"], lp["token_logprobs"][1:])
        assert choice["text"] == case["prompt"] or choice["text"].strip() == case["prompt"].strip()
        assert r.json()["usage"]["completion_tokens"] == 0


def test_prompt_logprobs_field_matches_transformers_with_ranks(daemon, fixture):
    case = fixture["prompts"][1]
    ids = case["prompt_ids"]
    r = post(daemon, "/v1/completions",
             {"prompt": ids, "max_tokens": 2, "prompt_logprobs": 3, "temperature": 0})
    assert r.status_code == 200, r.text
    choice = r.json()["choices"][0]
    pl = choice["prompt_logprobs"]
    assert len(pl) == len(ids) and pl[0] is None
    got, tops = [], []
    for i, pos in enumerate(pl[1:]):
        token = str(ids[i + 1])
        assert token in pos
        got.append(pos[token]["logprob"])
        ranked = sorted(pos.items(), key=lambda kv: kv[1]["rank"])
        tops.append([int(ranked[0][0])])
        ref = case["positions"][i]
        if abs(ref["logprob"] - max(ref["top_logprobs"])) > MARGIN or ref["rank"] == 1:
            assert pos[token]["rank"] == ref["rank"] or ref["rank"] > 3, f"position {i + 1}"
    check_positions(case["positions"], got, got_tops=tops)
    assert len(choice["text"]) > 0  # it still completes


def test_chat_prompt_logprobs_sit_beside_the_choices(daemon):
    r = post(daemon, "/v1/chat/completions",
             {"messages": [{"role": "user", "content": "Hi!"}], "max_tokens": 3,
              "prompt_logprobs": 1, "temperature": 0})
    assert r.status_code == 200, r.text
    body = r.json()
    usage = body["usage"]["prompt_tokens"]
    assert len(body["prompt_logprobs"]) == usage and body["prompt_logprobs"][0] is None
    for pos in body["prompt_logprobs"][1:]:
        for v in pos.values():
            assert v["logprob"] <= 0 and v["rank"] >= 1 and isinstance(v["decoded_token"], str)


def test_streaming_echo_starts_with_the_prompt(daemon):
    r = requests.post(daemon.url("/v1/completions"),
                      json={"prompt": "The capital of France is", "max_tokens": 4, "echo": True,
                            "temperature": 0, "stream": True},
                      stream=True, timeout=120)
    assert r.status_code == 200
    texts = []
    for line in r.iter_lines():
        if line.startswith(b"data: ") and line != b"data: [DONE]":
            texts.append(json.loads(line[6:])["choices"][0]["text"])
    assert texts and texts[0].startswith("The capital of France is")
    plain = post(daemon, "/v1/completions",
                 {"prompt": "The capital of France is", "max_tokens": 4, "temperature": 0})
    assert "".join(texts) == "The capital of France is" + plain.json()["choices"][0]["text"]


@pytest.mark.parametrize("path,body,field", [
    ("/v1/completions", {"prompt": "hi", "echo": True, "n": 2, "max_tokens": 2}, "echo"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "echo": True},
     "echo"),
    ("/v1/completions", {"prompt": "hi", "prompt_logprobs": 21}, "prompt_logprobs"),
    ("/v1/completions", {"prompt": "hi", "prompt_logprobs": -1}, "prompt_logprobs"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}],
                              "prompt_logprobs": 99}, "prompt_logprobs"),
    ("/v1/completions", {"prompt": "hi", "max_tokens": 0}, "max_tokens"),
    ("/v1/completions", {"prompt": "hi", "prompt_logprobs": 1, "stream": True},
     "prompt_logprobs"),
])
def test_bad_prompt_scoring_requests_get_400_naming_the_field(daemon, path, body, field):
    r = post(daemon, path, body)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error"
    assert field in err["message"] or err.get("param") == field


def test_grpc_prompt_logprobs(daemon, fixture):
    grpc = pytest.importorskip("grpc")
    protoc = pytest.importorskip("grpc_tools.protoc")
    import sys
    import tempfile
    out = tempfile.mkdtemp()
    proto_dir = ROOT / "proto"
    assert protoc.main(["protoc", f"-I{proto_dir}", f"--python_out={out}",
                        f"--grpc_python_out={out}",
                        str(proto_dir / "llmserve" / "v1" / "generation.proto")]) == 0
    sys.path.insert(0, out)
    from llmserve.v1 import generation_pb2 as pb, generation_pb2_grpc as pbg  # noqa: E402
    case = fixture["prompts"][0]
    with grpc.insecure_channel(daemon.grpc_target) as ch:
        stub = pbg.GenerationStub(ch)
        resp = stub.Complete(pb.GenerateRequest(prompt_token_ids=case["prompt_ids"], max_tokens=0,
                                                prompt_logprobs=2), timeout=120)
        lps = resp.choices[0].prompt_logprobs
        assert [p.token_id for p in lps] == case["prompt_ids"][1:]
        check_positions(case["positions"], [p.logprob for p in lps])
        assert all(p.rank >= 1 and len(p.top_logprobs) == 2 for p in lps)
        msgs = list(stub.Generate(pb.GenerateRequest(prompt_token_ids=case["prompt_ids"],
                                                     max_tokens=2, prompt_logprobs=0), timeout=120))
        with_prompt = [m for m in msgs if len(m.prompt_logprobs) > 0]
        assert len(with_prompt) == 1 and len(with_prompt[0].prompt_logprobs) == len(lps)
        assert math.isclose(with_prompt[0].prompt_logprobs[0].logprob, lps[0].logprob,
                            abs_tol=1e-5)
