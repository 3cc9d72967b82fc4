"""What a structured-output compile costs on a running daemon (issue 41): end-to-end latency of
fresh trivial regexes, and nested-array JSON schemas of growing depth (compile time grows about
as depth^3; the daemon's depth limit is raised so they compile).
Usage: LLMSERVE_TEST_MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf .venv-test/bin/python \
           bench/robustness/grammar_cost.py [DEPTH ...]   (default 10 64 200 400)"""
import sys
import time

import requests

sys.path.insert(0, "tests/integration")
from conftest import Daemon  # noqa: E402


def post(d, body):
    t = time.time()
    r = requests.post(d.url("/v1/completions"),
                      data=body, headers={"Content-Type": "application/json"}, timeout=900)
    return r.status_code, round(time.time() - t, 3), r.text[:160]


depths = [int(x) for x in sys.argv[1:]] or [10, 64, 200, 400]
d = Daemon(["--grammar-max-schema-depth", "100000", "--grammar-compile-timeout", "600"]).wait_ready()
try:
    for i in range(4):  # the first includes building the vocabulary tables
        regex = '"[0-9]{3}' + "x" * i + '"'
        print("regex", i, post(d, '{"prompt": "x", "max_tokens": 4, "temperature": 0, '
                                  '"structured_outputs": {"regex": ' + regex + '}}'), flush=True)
    for depth in depths:
        schema = '{"type":"array","items":' * depth + '{"type":"integer"}' + "}" * depth
        print("depth", depth, post(d, '{"prompt": "x", "max_tokens": 8, "temperature": 0, '
                                      '"structured_outputs": {"json": ' + schema + '}}'), flush=True)
finally:
    d.stop()
