"""TLS on both servers (server.tls_cert_file / server.tls_key_file): a self-signed certificate made
with openssl; HTTPS and gRPC-over-TLS answer, plain-text HTTP on the same port does not."""
import shutil
import signal
import subprocess
import time

import grpc
import pytest
import requests
from grpc_health.v1 import health_pb2, health_pb2_grpc

from conftest import Daemon, serve_available


@pytest.fixture
def tls_daemon(tmp_path):
    why = serve_available()
    if why:
        pytest.skip(why)
    if not shutil.which("openssl"):
        pytest.skip("openssl not installed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True)
    d = Daemon(("--server.tls-cert-file", str(cert), "--server.tls-key-file", str(key)))
    base = f"https://127.0.0.1:{d.http_port}"
    end = time.time() + 120
    while True:
        if d.proc.poll() is not None:
            pytest.fail(f"llmserve exited with {d.proc.returncode}:\n{d.logs()}")
        try:
            if requests.get(base + "/ready", verify=str(cert), timeout=2).status_code == 200:
                break
        except requests.RequestException:
            pass
        if time.time() > end:
            d.stop(signal.SIGKILL)
            pytest.fail(f"TLS daemon not ready:\n{d.logs()}")
        time.sleep(0.25)
    yield d, base, cert
    d.stop(signal.SIGKILL)


def test_https_completion_and_no_plaintext(tls_daemon):
    d, base, cert = tls_daemon
    r = requests.post(base + "/v1/completions", verify=str(cert), timeout=120,
                      json={"prompt": "The capital of France is", "max_tokens": 4,
                            "temperature": 0})
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["text"]
    with pytest.raises(requests.RequestException):
        requests.get(f"http://127.0.0.1:{d.http_port}/health", timeout=5).raise_for_status()


def test_grpc_over_tls(tls_daemon):
    d, _, cert = tls_daemon
    creds = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
    with grpc.secure_channel(d.grpc_target, creds) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        resp = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=30)
        assert resp.status == health_pb2.HealthCheckResponse.SERVING
    with grpc.insecure_channel(d.grpc_target) as channel:
        with pytest.raises(grpc.RpcError):
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
