"""Bad input: >= 300 malformed requests over HTTP and gRPC, each a 4xx (gRPC INVALID_ARGUMENT or
OUT_OF_RANGE), 0 5xx, and the daemon serves normally after."""
import pytest
import requests

import bad_input_corpus
from soak_util import soak_daemon, pb  # noqa: F401 (fixtures)

HTTP = bad_input_corpus.http_cases()
GRPC = bad_input_corpus.grpc_cases()


def test_corpus_size():
    assert len(HTTP) + len(GRPC) >= 300, (len(HTTP), len(GRPC))


def test_bad_input_over_http_and_grpc(soak_daemon, pb):
    grpc = pytest.importorskip("grpc")
    daemon = soak_daemon()
    failures = []
    with requests.Session() as s:
        for name, method, path, body, want in HTTP:
            try:
                r = s.request(method, daemon.url(path), data=body, timeout=60,
                              headers={"Content-Type": "application/json"})
            except requests.RequestException as e:
                failures.append(f"{name}: {e!r}")
                continue
            if r.status_code not in want:
                failures.append(f"{name}: HTTP {r.status_code} (want {want}) {r.text[:120]}")
            if r.status_code >= 500:
                failures.append(f"{name}: 5xx")
    channel = grpc.insecure_channel(daemon.grpc_target)
    stub = pb[1].GenerationStub(channel)
    for name, kwargs, want in GRPC:
        try:
            stub.Complete(pb[0].GenerateRequest(**kwargs), timeout=60)
            failures.append(f"{name}: accepted")
        except grpc.RpcError as e:
            if e.code().name not in want:
                failures.append(f"{name}: {e.code().name} (want {want}) {e.details()[:120]}")
    channel.close()
    print(f"bad input: {len(HTTP)} HTTP + {len(GRPC)} gRPC cases, {len(failures)} failures")
    assert daemon.proc.poll() is None, daemon.logs()
    assert not failures, failures[:20]
    assert requests.get(daemon.url("/health"), timeout=10).status_code == 200
    assert requests.get(daemon.url("/ready"), timeout=10).status_code == 200
    r = requests.post(daemon.url("/v1/completions"), json={"prompt": "ok", "max_tokens": 2},
                      timeout=60)
    assert r.status_code == 200
