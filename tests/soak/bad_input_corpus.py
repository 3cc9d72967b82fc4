"""The bad-input corpus of the soak test: the front end's corpus (tests/integration/
test_bad_requests.py, imported, not copied) plus the cases below, over HTTP and gRPC.

HTTP case: (name, method, path, body bytes, expected statuses). gRPC case: (name, kwargs of a
GenerateRequest, expected status code names)."""
import importlib.util
import json
import random
import sys
import types

from soak_util import ROOT

MSG = [{"role": "user", "content": "hi"}]
FIELDS = ["max_tokens", "temperature", "top_p", "top_k", "min_p", "presence_penalty",
          "frequency_penalty", "repetition_penalty", "seed", "n", "logprobs", "stop",
          "stop_token_ids", "logit_bias", "ignore_eos", "min_tokens", "stream", "priority",
          "timeout", "user", "model"]
WRONG = [{"x": [1]}, [[[1]]], -2 ** 63 - 1]


def integration_cases():
    path = ROOT / "tests" / "integration" / "test_bad_requests.py"
    for name in ("pytest", "requests"):
        if name not in sys.modules:
            try:
                __import__(name)
            except ImportError:
                stub = types.ModuleType(name)
                stub.mark = types.SimpleNamespace(parametrize=lambda *a, **k: (lambda f: f))
                sys.modules[name] = stub
    spec = importlib.util.spec_from_file_location("llmserve_integration_bad_requests", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return [(f"it: {name}", "POST", p, data, (status,)) for name, (p, data), status, _ in mod.corpus()]


def http_cases():
    c = integration_cases()
    cmpl = {"prompt": "hi", "max_tokens": 2}
    chat = {"messages": MSG, "max_tokens": 2}
    # Every shared field with values no field accepts, on both routes.
    for field in FIELDS:
        for i, v in enumerate(WRONG):
            c.append((f"cmpl {field} wrong#{i}", "POST", "/v1/completions",
                      json.dumps(dict(cmpl, **{field: v})).encode(), (400,)))
            c.append((f"chat {field} wrong#{i}", "POST", "/v1/chat/completions",
                      json.dumps(dict(chat, **{field: v})).encode(), (400,)))
    # Chat message shapes.
    for i, m in enumerate([[{"role": 5, "content": "x"}], [{"role": None, "content": "x"}],
                           [{"role": ["user"], "content": "x"}], [None], [[]],
                           [{"role": "user", "content": {"text": "x"}}],
                           [{"role": "user", "content": [{"type": "text", "text": 5}]}],
                           [{"role": "user", "content": [{"type": "text"}]}],
                           [{"role": "user", "content": [5]}],
                           [{"role": "user", "content": [{"type": 5, "text": "x"}]}],
                           [{"role": "user", "content": None}],
                           [{"role": "system", "content": None}],
                           {"role": "user", "content": "x"}, 5, True]):
        c.append((f"chat messages shape#{i}", "POST", "/v1/chat/completions",
                  json.dumps(dict(chat, messages=m)).encode(), (400,)))
    # Truncations of a valid body, garbage bytes, deep nesting, bad escapes.
    good = json.dumps({"prompt": "hello there", "max_tokens": 4, "temperature": 0.5,
                       "stop": ["x"]}).encode()
    for cut in range(1, len(good), max(1, len(good) // 25)):
        c.append((f"truncated at {cut}", "POST", "/v1/completions", good[:cut], (400,)))
    rng = random.Random(8)
    for i in range(25):
        c.append((f"garbage#{i}", "POST", "/v1/completions" if i % 2 else "/v1/chat/completions",
                  bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))), (400,)))
    for path in ("/v1/completions", "/v1/chat/completions"):
        c += [(f"{path} deep array", "POST", path, b"[" * 100000, (400,)),
              (f"{path} deep object", "POST", path, b'{"a":' * 50000, (400,)),
              (f"{path} lone surrogate", "POST", path, b'{"prompt":"\\ud800","messages":[]}', (400,)),
              (f"{path} bad escape", "POST", path, b'{"prompt":"\\x41"}', (400,)),
              (f"{path} huge number", "POST", path, b'{"prompt":"a","max_tokens":1e400}', (400,)),
              (f"{path} duplicate-free junk", "POST", path, b'{"prompt":"a"}{"prompt":"b"}', (400,)),
              (f"{path} NUL body", "POST", path, b"\0" * 64, (400,))]
    # Token-id prompts out of the vocab and over the context; tokenize / detokenize.
    for ids in ([2 ** 31 - 1], [-2 ** 31], [0, -5, 1], list(range(100000))):
        c.append((f"ids {str(ids)[:20]}", "POST", "/v1/completions",
                  json.dumps({"prompt": ids, "max_tokens": 1}).encode(), (400,)))
    for body in (b"", b"{}", b'{"text":5}', b'{"prompt":[1]}', b"[1]"):
        c.append((f"tokenize {body[:12]!r}", "POST", "/tokenize", body, (400,)))
    for body in (b"", b"{}", b'{"tokens":"x"}', b'{"tokens":[-1]}', b'{"tokens":[1e12]}',
                 b'{"tokens":[[1]]}'):
        c.append((f"detokenize {body[:16]!r}", "POST", "/detokenize", body, (400,)))
    # Routes and methods.
    for method, path in (("GET", "/v1/completions"), ("PUT", "/v1/completions"),
                         ("DELETE", "/v1/chat/completions"), ("GET", "/v2/models"),
                         ("POST", "/v1/models/x/y"), ("GET", "/" + "a" * 4000),
                         ("GET", "/%zz"), ("POST", "/v1/completions/extra")):
        c.append((f"{method} {path[:30]}", method, path, b"", (404, 405)))
    return c


def grpc_cases():
    base = {"prompt": "hi", "max_tokens": 2}
    bad = {
        "max_tokens": [-1], "temperature": [-1.0, 2.5, float("nan"), float("inf")],
        "top_p": [0.0, 1.5, -0.5, float("nan")], "top_k": [-5], "min_p": [-0.1, 1.5, float("nan")],
        "presence_penalty": [2.5, -3.0, float("nan")], "frequency_penalty": [2.5, -2.5],
        "repetition_penalty": [0.0, -1.0, 11.0, float("inf")], "n": [0, -1, 17, 2 ** 31 - 1],
        "logprobs": [-1, 21, 10 ** 6],
    }
    c = []
    for field, values in bad.items():
        for v in values:
            c.append((f"grpc {field}={v!r}"[:50], dict(base, **{field: v}), ("INVALID_ARGUMENT",)))
    c += [
        # Past the context: OUT_OF_RANGE, as docs/ROUTERS.md says (smg maps it to 400).
        ("grpc max_tokens=10000000", dict(base, max_tokens=10 ** 7), ("OUT_OF_RANGE",)),
        ("grpc model='gpt-4'", dict(base, model="gpt-4"), ("NOT_FOUND",)),
        ("grpc model='xxx...'", dict(base, model="x" * 1000), ("NOT_FOUND",)),
        ("grpc empty", {}, ("INVALID_ARGUMENT",)),
        ("grpc no prompt", {"max_tokens": 2}, ("INVALID_ARGUMENT",)),
        ("grpc empty prompt", {"prompt": ""}, ("INVALID_ARGUMENT",)),
        ("grpc both prompts", {"prompt": "x", "prompt_token_ids": [1]}, ("INVALID_ARGUMENT",)),
        ("grpc ids negative", {"prompt_token_ids": [-1]}, ("INVALID_ARGUMENT",)),
        ("grpc ids huge", {"prompt_token_ids": [2 ** 31 - 1]}, ("INVALID_ARGUMENT",)),
        ("grpc logit_bias id", {**base, "logit_bias": {10 ** 8: 1.0}}, ("INVALID_ARGUMENT",)),
        ("grpc logit_bias neg id", {**base, "logit_bias": {-1: 1.0}}, ("INVALID_ARGUMENT",)),
        ("grpc logit_bias big", {**base, "logit_bias": {5: 101.0}}, ("INVALID_ARGUMENT",)),
        ("grpc logit_bias nan", {**base, "logit_bias": {5: float("nan")}}, ("INVALID_ARGUMENT",)),
        ("grpc stop many", {**base, "stop": [f"s{i}" for i in range(40)]}, ("INVALID_ARGUMENT",)),
        ("grpc stop empty", {**base, "stop": [""]}, ("INVALID_ARGUMENT",)),
        ("grpc stop long", {**base, "stop": ["x" * 5000]}, ("INVALID_ARGUMENT",)),
        ("grpc stop ids", {**base, "stop_token_ids": [-1]}, ("INVALID_ARGUMENT",)),
        ("grpc stop ids huge", {**base, "stop_token_ids": [10 ** 8]}, ("INVALID_ARGUMENT",)),
        ("grpc min>max", {**base, "min_tokens": 5}, ("INVALID_ARGUMENT",)),
        ("grpc min neg", {**base, "min_tokens": -1}, ("INVALID_ARGUMENT",)),
        ("grpc prompt over context", {"prompt": "hello " * 20000, "max_tokens": 1},
         ("INVALID_ARGUMENT", "OUT_OF_RANGE")),
        ("grpc ids over context", {"prompt_token_ids": [1] * 100000, "max_tokens": 1},
         ("INVALID_ARGUMENT", "OUT_OF_RANGE")),
    ]
    return c
